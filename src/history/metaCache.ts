/**
 * A session's meta as the record keeps it: a cache of the log, replaced without a flush of
 * its own. A change of something other than the counts is written at once; counts are
 * written behind the turn, at most once a second (opening heals counts that lag after a
 * crash). Writes go one at a time, so an older meta never lands after a newer one; a write
 * behind that failed is reported by the next update; `flush` writes what is pending.
 */
import type { SessionMeta } from '../storage/sessionMeta.js';
import type { SessionStorage } from '../storage/sessionStore.js';

const INTERVAL_MS = 1_000;
/** Fields whose change is written to the meta at once; counts wait (at most a second). */
const SIGNIFICANT = ['historyMode', 'pinnedMode', 'memoryWrites', 'name', 'title', 'model'] as const;

export class MetaCache {
  private written: SessionMeta;
  private writtenAt = 0;
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private failure: unknown = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: Pick<SessionStorage, 'writeMeta'>,
    public value: SessionMeta,
    private readonly now: () => number,
  ) {
    this.written = value;
  }

  async update(patch: Partial<SessionMeta>): Promise<void> {
    if (this.failure) {
      const failure = this.failure;
      this.failure = null;
      throw failure;
    }
    const next = { ...this.value, ...patch, updatedAt: this.now() };
    const significant = SIGNIFICANT.some((k) => next[k] !== this.written[k]);
    this.value = next;
    this.dirty = true;
    if (significant) return this.write();
    this.timer ??= setTimeout(
      () => {
        this.timer = null;
        if (this.dirty) this.write().catch((error: unknown) => (this.failure = error));
      },
      Math.max(0, INTERVAL_MS - (this.now() - this.writtenAt)),
    );
    this.timer.unref();
  }

  /** The counts of an append, written with the next write. */
  counted(next: SessionMeta): void {
    this.value = next;
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.dirty || this.value !== this.written) await this.write();
  }

  private write(): Promise<void> {
    const write = this.writing
      .catch(() => {})
      .then(async () => {
        const meta = this.value;
        if (meta === this.written && !this.dirty) return;
        await this.storage.writeMeta(meta, { durable: false });
        this.written = meta;
        this.writtenAt = meta.updatedAt;
        this.dirty = this.value !== meta;
      });
    this.writing = write;
    return write;
  }
}
