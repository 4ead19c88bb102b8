/**
 * The sessions a proxy has open, each for one request at a time. A session is opened for a
 * request (its lease taken) and kept open for `keepOpenMs` after it, so that the
 * conversation's next request — an agent's loop sends one after another — finds it warm
 * instead of reading its log again; then it is closed (the lease given back), so that a later
 * request may land on any proxy sharing the store. Requests of one session that meet in one
 * proxy wait for each other in order; one whose session another proxy holds waits for the
 * lease (that proxy keeps it at most `keepOpenMs` past its last request).
 */
import { HostLoop, type HostLoopOptions } from '../session/hostLoop.js';
import { sessionIdFor } from '../session/sessionName.js';
import { SESSION_ID } from '../storage/sessionPaths.js';
import { SessionInUseError } from '../storage/storeErrors.js';
import { BadRequestError } from './chatWire.js';

/** A request the session refused (the client's to fix): answered 400, and a session it created is not kept. */
function isRefusal(error: unknown): boolean {
  return error instanceof BadRequestError || error instanceof RangeError;
}

interface Kept {
  loop: HostLoop;
  /** What the loop was opened with that a request may change (model, window, caching, secrets): another reopens it. */
  signature: string;
  timer: NodeJS.Timeout | null;
}

export class SessionGate {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly open = new Map<string, Kept>();

  constructor(
    private readonly leaseWaitMs: number,
    private readonly keepOpenMs: number,
  ) {}

  /**
   * Run `work` with the named session open, alone among this proxy's requests of it. A
   * session this request created that it could not take (a refusal: a request too large,
   * say) is closed and handed to `removeRefused`: a refused request creates nothing.
   */
  async use<T>(
    name: string,
    options: HostLoopOptions,
    work: (loop: HostLoop) => Promise<T>,
    hooks: { removeRefused?: (id: string) => Promise<void> } = {},
  ): Promise<T> {
    const id = SESSION_ID.test(name) ? name : sessionIdFor(name);
    const before = this.tails.get(id) ?? Promise.resolve();
    const run = before
      .catch(() => {})
      .then(async () => {
        // The caching too: one conversation may come through the Messages door, then through another.
        const { model, contextWindow, maxOutputTokens, caching, secrets = [] } = options;
        const signature = JSON.stringify([model, contextWindow, maxOutputTokens, caching, secrets]);
        const kept = await this.reuse(id, signature);
        const loop = kept ?? (await this.opened({ ...options, sessionId: name }));
        // Created for this very request: nothing before it is in the session.
        const fresh = !kept && loop.created;
        let end: 'keep' | 'close' | 'closed' = 'close';
        try {
          const result = await work(loop);
          end = 'keep';
          return result;
        } catch (error) {
          if (fresh && hooks.removeRefused && isRefusal(error)) {
            end = 'closed';
            await loop.close();
            await hooks.removeRefused(loop.session.id);
          }
          throw error;
        } finally {
          if (end === 'keep' && this.keepOpenMs > 0) this.keep(id, loop, signature);
          else if (end !== 'closed') await loop.close();
        }
      });
    const tail = run.catch(() => {});
    this.tails.set(id, tail);
    try {
      return await run;
    } finally {
      if (this.tails.get(id) === tail) this.tails.delete(id);
    }
  }

  /** Close every session kept open (the proxy stops). */
  async close(): Promise<void> {
    const kept = [...this.open.values()];
    this.open.clear();
    for (const k of kept) if (k.timer) clearTimeout(k.timer);
    await Promise.all(kept.map((k) => k.loop.close()));
  }

  /** The session's loop kept from its last request, if it was opened as this one needs; another is closed. */
  private async reuse(id: string, signature: string): Promise<HostLoop | null> {
    const kept = this.open.get(id);
    if (!kept) return null;
    this.open.delete(id);
    if (kept.timer) clearTimeout(kept.timer);
    if (kept.signature === signature) return kept.loop;
    await kept.loop.close();
    return null;
  }

  private keep(id: string, loop: HostLoop, signature: string): void {
    const kept: Kept = { loop, signature, timer: null };
    kept.timer = setTimeout(() => {
      if (this.open.get(id) !== kept) return;
      this.open.delete(id);
      // Closed in the session's order: a request that came meanwhile took it from the map already.
      const tail = (this.tails.get(id) ?? Promise.resolve()).catch(() => {}).then(() => loop.close());
      this.tails.set(
        id,
        tail.catch(() => {}),
      );
    }, this.keepOpenMs);
    kept.timer.unref();
    this.open.set(id, kept);
  }

  /** Open, waiting while another proxy holds the session (or creates it this very moment). */
  private async opened(options: HostLoopOptions): Promise<HostLoop> {
    const until = Date.now() + this.leaseWaitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
      try {
        return await HostLoop.open(options);
      } catch (error) {
        const busy = error instanceof SessionInUseError || /exists already/.test((error as Error).message);
        if (!busy || Date.now() + pause > until) throw error;
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }
}
