/**
 * The session's write quota: what the model's write and edit calls hold in working-memory
 * now, each file counted at the size its last write left, against a limit for the session.
 *
 * Held now, not ever written: a model that rewrites overview.md every turn writes without
 * end but holds 5 KB, and must never be stopped for it; what grows without end, and fills a
 * disk, is what the model leaves behind. So a rewrite counts only its new size, a file
 * written shorter gives its bytes back, and a write that does not grow the total always
 * passes, even past the limit (trimming is how the model makes room). workmem's own files
 * (compaction archives, saved tool outputs) are not the model's writes and do not count.
 * The log keeps each write's size (memory_updated / memory_written events), so a resumed
 * session knows what it holds.
 */
import { PathRefusedError } from '../errors/pathRefused.js';
import { byteSize } from '../format/byteSize.js';
import type { LogEntry } from '../storage/messageLog.js';

/** The log events that record a write by the model: the overview's, and any other file's. */
export const MEMORY_UPDATED = 'memory_updated';
export const MEMORY_WRITTEN = 'memory_written';

export class HeldWrites {
  private readonly files: Map<string, number>;
  private total = 0;

  constructor(
    files: ReadonlyMap<string, number>,
    readonly quota: number,
  ) {
    this.files = new Map(files);
    for (const bytes of this.files.values()) this.total += bytes;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.total;
  }

  /** Files held (written by the model and not emptied). */
  get count(): number {
    let n = 0;
    for (const bytes of this.files.values()) if (bytes > 0) n++;
    return n;
  }

  /** Refuses (PathRefusedError, a tool error) a write of `bytes` to `path` that would take the total past the quota. */
  check(path: string, bytes: number): void {
    const before = this.files.get(path) ?? 0;
    const after = this.total - before + bytes;
    if (bytes <= before || after <= this.quota) return;
    throw new PathRefusedError(
      `not written: your files in working-memory already hold ${byteSize(this.total)} of this session's quota of ${byteSize(this.quota)}, and this write would bring them to ${byteSize(after)}. ` +
        'The quota is for the whole session: it does not reset with the next turn. Make room first: rewrite long files shorter (edit, or write a shorter version; write an empty file in place of one no longer needed), ' +
        'keep notes brief and in fewer files, and leave bulky text out of working memory. compact_history shortens the conversation, not your files.',
    );
  }

  /** A write of `bytes` to `path` landed. */
  held(path: string, bytes: number): void {
    this.total += bytes - (this.files.get(path) ?? 0);
    this.files.set(path, bytes);
  }
}

/** Per file, the size the model's last write left, as the log records it. */
export function heldFilesOf(entries: readonly LogEntry[]): Map<string, number> {
  const files = new Map<string, number>();
  for (const entry of entries) {
    if (entry.type !== 'event' || (entry.name !== MEMORY_UPDATED && entry.name !== MEMORY_WRITTEN)) continue;
    const { path, bytes } = entry.data;
    if (typeof path === 'string' && typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes >= 0) files.set(path, bytes);
  }
  return files;
}
