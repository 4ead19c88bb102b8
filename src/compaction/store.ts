/**
 * What compaction needs of a session's storage, and nothing more: the history, a place
 * for the verbatim archive inside working-memory/ and the log's compaction entry, written
 * together. Async,
 * so that a store on a database fits as well as the files.
 */
import type { HistoryView } from '../history/historyView.js';
import type { CompactionEntry } from '../storage/messageLog.js';
import type { SessionRecord } from '../history/sessionRecord.js';

export interface CompactionStore {
  /** The derived history as it is now; a compaction entry changes it. */
  history(): HistoryView;
  /**
   * A path given for an archive, relative to working-memory/ (a leading "working-memory/"
   * is accepted); throws PathRefusedError for one that would leave it.
   */
  resolvePath(path: string): Promise<string>;
  /** Whether a file inside working-memory/ exists. */
  exists(path: string): Promise<boolean>;
  /**
   * Write the archive inside working-memory/ (or append a section to it) and append the
   * compaction entry as one unit, durably: both or, on a database, neither. The history
   * reflects the entry from then on.
   */
  commit(archive: { path: string; content: string; append: boolean }, entry: Omit<CompactionEntry, 'seq' | 'ts'>): Promise<CompactionEntry>;
}

/** A session's record (its log and working memory, on any store) as a compaction store. */
export function compactionStoreOf(record: SessionRecord): CompactionStore {
  return {
    history: () => record.history,
    resolvePath: (path) => record.memory.relOf(path),
    exists: (path) => record.memory.exists(path),
    commit: (archive, entry) => record.appendCompaction(entry, archive),
  };
}
