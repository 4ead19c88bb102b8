/**
 * What compaction needs of a session's storage, and nothing more: the history, a place
 * for the verbatim archive inside working-memory/, and the log's compaction entry. Async,
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
  /** Write a file inside working-memory/ (or append a section to it); returns where, as "working-memory/<path>". */
  writeFile(path: string, content: string, options: { append: boolean }): Promise<string>;
  /** Append the compaction entry to the log (durably); the history reflects it from then on. */
  appendCompaction(entry: Omit<CompactionEntry, 'seq' | 'ts'>): Promise<CompactionEntry>;
}

/** A session's record (its log and working memory, on any store) as a compaction store. */
export function compactionStoreOf(record: SessionRecord): CompactionStore {
  return {
    history: () => record.history,
    resolvePath: (path) => record.memory.relOf(path),
    exists: (path) => record.memory.exists(path),
    writeFile: (path, content, options) => record.memory.writeSystem(path, content, options),
    appendCompaction: (entry) => record.appendCompaction(entry),
  };
}
