/**
 * Write-behind for the reminder tracker: a turn persists its state without waiting for
 * the store, and the write comes after the turn's own work (never on the request's path),
 * coalesced: at most one a second, only the newest state. A failed write is tried again
 * with the next state (or by `flush`, with the state that failed), and a later write that
 * succeeds supersedes it: a store that was down for a moment leaves nothing to report.
 * `flush` writes what is pending and reports a write that still fails. A crash loses at most
 * the last second's states, which opening rebuilds from the log (reconcileTracker).
 */
import type { TrackerState } from '../memory/reminderTracker.js';
import type { StateStore } from '../storage/stateStore.js';

const INTERVAL_MS = 1_000;

export class TrackerWriter {
  private latest: TrackerState | null = null;
  private lastQueued = '';
  private inflight: Promise<void> | null = null;
  private failure: unknown = null;
  /** The newest state whose write failed, written again by `flush` if nothing newer came. */
  private unwritten: TrackerState | null = null;
  private timer: NodeJS.Timeout | null = null;
  private writtenAt = 0;

  constructor(
    private readonly store: StateStore,
    private readonly key: string,
  ) {}

  persist(state: TrackerState): void {
    const json = JSON.stringify(state);
    if (json === this.lastQueued) return;
    this.lastQueued = json;
    this.latest = state;
    if (this.timer || this.inflight) return;
    this.schedule();
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.start(), Math.max(0, INTERVAL_MS - (Date.now() - this.writtenAt)));
    this.timer.unref();
  }

  async flush(state?: TrackerState): Promise<void> {
    if (state) this.persist(state);
    if (this.unwritten && !this.latest && !this.inflight) this.latest = this.unwritten;
    if (this.timer || this.latest) this.start();
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

  private start(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.inflight ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.latest) {
        const state = this.latest;
        this.latest = null;
        this.writtenAt = Date.now();
        try {
          await this.store.set(this.key, state);
        } catch (error) {
          this.unwritten = this.latest ? null : state;
          throw error;
        }
        this.failure = null;
        this.unwritten = null;
      }
    } catch (error) {
      this.failure = error;
    } finally {
      this.inflight = null;
      // A state that came while a write failed is written in its turn, as any other.
      if (this.latest && !this.timer) this.schedule();
    }
  }
}
