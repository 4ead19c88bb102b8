/**
 * Write-behind for the reminder tracker: a turn persists its state without waiting for
 * the store, and the write starts after the turn's own work (never on the request's path:
 * a file store writes synchronously); at most one write is in flight and only the newest
 * state is written next. `flush` waits and reports a failed write. A crash loses at most
 * the last states, which opening rebuilds from the log (reconcileTracker).
 */
import type { TrackerState } from '../memory/reminderTracker.js';
import type { StateStore } from '../storage/stateStore.js';

export class TrackerWriter {
  private latest: TrackerState | null = null;
  private lastQueued = '';
  private inflight: Promise<void> | null = null;
  private failure: unknown = null;

  constructor(
    private readonly store: StateStore,
    private readonly key: string,
  ) {}

  persist(state: TrackerState): void {
    const json = JSON.stringify(state);
    if (json === this.lastQueued) return;
    this.lastQueued = json;
    this.latest = state;
    this.inflight ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
  }

  async flush(state?: TrackerState): Promise<void> {
    if (state) this.persist(state);
    while (this.inflight) await this.inflight;
    this.throwIfFailed();
  }

  /** Report (once) a write that failed since the last check; the next state is written again. */
  throwIfFailed(): void {
    if (!this.failure) return;
    const failure = this.failure;
    this.failure = null;
    this.lastQueued = '';
    throw failure;
  }

  private async drain(): Promise<void> {
    try {
      while (this.latest) {
        const state = this.latest;
        this.latest = null;
        await this.store.set(this.key, state);
      }
    } catch (error) {
      this.failure = error;
    } finally {
      this.inflight = null;
    }
  }
}
