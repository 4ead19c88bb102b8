/**
 * The sessions a proxy has open, each for one request at a time: opened for the request
 * (its lease taken) and closed after it (the lease given back), so that the next request
 * of the session may land on any proxy sharing the store. Requests of one session that meet
 * in one proxy wait for each other in order; one whose session another proxy holds waits
 * for the lease (a client's next request often arrives while the last is being closed).
 */
import { HostLoop, type HostLoopOptions } from '../session/hostLoop.js';
import { sessionIdFor } from '../session/sessionName.js';
import { SESSION_ID } from '../storage/sessionPaths.js';
import { SessionInUseError } from '../storage/storeErrors.js';

export class SessionGate {
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(private readonly leaseWaitMs: number) {}

  /** Run `work` with the named session open, alone among this proxy's requests of it; closed after. */
  async use<T>(name: string, options: HostLoopOptions, work: (loop: HostLoop) => Promise<T>): Promise<T> {
    const id = SESSION_ID.test(name) ? name : sessionIdFor(name);
    const before = this.tails.get(id) ?? Promise.resolve();
    const run = before
      .catch(() => {})
      .then(async () => {
        const loop = await this.open({ ...options, sessionId: name });
        try {
          return await work(loop);
        } finally {
          await loop.close();
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

  /** Open, waiting while another proxy holds the session (or creates it this very moment). */
  private async open(options: HostLoopOptions): Promise<HostLoop> {
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
