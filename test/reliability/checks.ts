/**
 * What "the session is consistent" means, checked from the outside: the derived history
 * is a message list a model API accepts, and the reminder tracker agrees with the log.
 */
import { readdirSync, type Dirent } from 'node:fs';
import { join, relative } from 'node:path';
import { checkEntry, readLog, type LogEntry } from '../../src/storage/messageLog.js';
import type { HistoryView } from '../../src/history/historyView.js';
import type { TrackerState } from '../../src/memory/reminderTracker.js';

/** Why `view` is not a valid Chat Completions message list (empty when it is). */
export function historyProblems(view: HistoryView): string[] {
  const problems: string[] = [];
  let open: Set<string> | null = null; // calls of the last assistant message still without a result
  for (let i = 0; i < view.length; i++) {
    const { message, seq } = view.items[i]!;
    const shape = checkEntry({ type: 'message', seq: 0, ts: 0, turn: 0, tokens: 0, message });
    if (shape) problems.push(`seq ${seq}: ${shape}`);
    if (message.role === 'tool') {
      if (!open?.delete(message.tool_call_id))
        problems.push(`seq ${seq}: a tool result for ${message.tool_call_id}, which no open call has`);
      continue;
    }
    if (open?.size) problems.push(`seq ${seq}: ${[...open].join(', ')} got no result before the next message`);
    open = message.role === 'assistant' && message.tool_calls?.length ? new Set(message.tool_calls.map((c) => c.id)) : null;
  }
  if (open?.size) problems.push(`the last model response has calls without results: ${[...open].join(', ')}`);
  return problems;
}

/** What the log says the tracker must at least be. */
export function trackerProblems(tracker: TrackerState, entries: readonly LogEntry[]): string[] {
  let updates = 0;
  let since = 0;
  for (const entry of entries) {
    if (entry.type === 'event' && entry.name === 'memory_updated') {
      updates++;
      since = 0;
    } else if (entry.type === 'message' && entry.message.role === 'assistant') since++;
  }
  const problems: string[] = [];
  if (tracker.updates !== updates) problems.push(`tracker counts ${tracker.updates} memory updates, the log ${updates}`);
  if (tracker.rounds < since) problems.push(`tracker counts ${tracker.rounds} requests since the last update, the log ${since}`);
  return problems;
}

/** Everything under `dir`, depth first, symlinks not followed; `skip` (a full path) is left out with its contents. */
export function entriesUnder(dir: string, skip?: string): { full: string; rel: string; entry: Dirent }[] {
  const out: { full: string; rel: string; entry: Dirent }[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (full === skip) continue;
      out.push({ full, rel: relative(dir, full), entry });
      if (entry.isDirectory()) walk(full);
    }
  };
  walk(dir);
  return out;
}

export function logEntriesOf(dir: string): LogEntry[] {
  return readLog(`${dir}/messages.jsonl`).entries;
}
