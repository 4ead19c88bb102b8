/**
 * A pg Pool whose every query is seen: `sent` when a statement goes to the server (one
 * round trip each: BEGIN and COMMIT count), `done` when its answer is back, before the
 * caller sees it. The store is given it through its `pool` option; the bench counts round
 * trips with it, the fault matrix stops a process at a chosen statement.
 */
import pg from 'pg';

export interface QueryObserver {
  sent?(text: string): void;
  done?(text: string): void;
  /** An error to give the caller instead of the server's answer: a statement done, its answer lost (the connection cut). */
  fail?(text: string): Error | null;
}

export function observedPool(config: pg.PoolConfig, observer: QueryObserver): pg.Pool {
  class ObservedClient extends pg.Client {
    override query(...args: unknown[]): never {
      const first = args[0];
      const text = typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '');
      observer.sent?.(text);
      const last = args.at(-1);
      // pg-pool calls with a callback; the store's own clients with a promise.
      if (typeof last === 'function') {
        args[args.length - 1] = (error: unknown, result: unknown) => {
          if (!error) observer.done?.(text);
          // Given the error, pg-pool drops this connection, as it would a cut one.
          const lost = error ? null : (observer.fail?.(text) ?? null);
          (last as (e: unknown, r: unknown) => void)(lost ?? error, lost ? undefined : result);
        };
        return (super.query as (...a: unknown[]) => never)(...args);
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result instanceof Promise) {
        return result.then((value: unknown) => {
          observer.done?.(text);
          const lost = observer.fail?.(text);
          if (lost) throw lost;
          return value;
        }) as never;
      }
      return result as never;
    }
  }
  const pool = new pg.Pool({ ...config, Client: ObservedClient });
  pool.on('error', () => {}); // an idle connection cut by the server: the next query makes a new one
  return pool;
}
