/**
 * What compaction needs of a session's storage, and nothing more: the history, a place
 * for the verbatim archive inside working-memory/, and the log's compaction entry. Async,
 * so that a store on a database fits as well as the files.
 */
import type { HistoryView } from '../history/historyView.js';
import type { CompactionEntry } from '../storage/messageLog.js';
import { resolveInside } from '../storage/sandboxPath.js';
import type { SessionFiles } from '../storage/sessionFiles.js';

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

/** Today's session files as a compaction store. */
export function compactionStoreOf(files: SessionFiles): CompactionStore {
  return {
    history: () => files.history,
    resolvePath: async (path) => resolveInside(files.memory.root, path, 'working-memory/').rel,
    exists: async (path) => files.memory.exists(path),
    writeFile: async (path, content, options) => files.memory.writeSystem(path, content, options),
    appendCompaction: async (entry) => files.appendCompaction(entry),
  };
}
