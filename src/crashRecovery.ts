/**
 * What opening a session does after a crash, beyond what the files repair themselves
 * (a torn last log line skipped, meta.json rebuilt, temporary files removed): a turn
 * killed — or stopped by a failed write — between a model response and its tool results
 * leaves tool calls without results, which no model API accepts. Each gets a result
 * saying it was interrupted, appended to the log like any other, so the history is a
 * valid message list again. Done when a session opens and before each new user message.
 */
import type { HistoryView } from './historyView.js';
import type { MessageEntry } from './messageLog.js';
import type { ToolCall } from './messages.js';
import type { SessionFiles } from './sessionFiles.js';
import type { TokenCounter } from './tokens.js';

export const INTERRUPTED_RESULT =
  'Interrupted: the turn stopped (a crash, a kill or a failed write) before the result of this tool call was saved; its effect is unknown.';

/** Tool calls of the history's last model response that have no result after it. */
export function unansweredCalls(view: HistoryView): { turn: number; calls: ToolCall[] } | null {
  let i = view.length - 1;
  const answered = new Set<string>();
  while (i >= 0 && view.items[i]!.message.role === 'tool') {
    const message = view.items[i]!.message;
    if (message.role === 'tool') answered.add(message.tool_call_id);
    i--;
  }
  const last = view.items[i];
  if (!last || last.message.role !== 'assistant' || !last.message.tool_calls?.length) return null;
  const calls = last.message.tool_calls.filter((c) => !answered.has(c.id));
  return calls.length ? { turn: last.turn, calls } : null;
}

/** Answer the interrupted calls in the log; returns the entries appended. */
export function answerInterruptedCalls(files: SessionFiles, counter: TokenCounter): MessageEntry[] {
  const open = unansweredCalls(files.history);
  if (!open) return [];
  const entries = open.calls.map((call) => {
    const message = { role: 'tool' as const, tool_call_id: call.id, content: INTERRUPTED_RESULT };
    return files.appendMessage(open.turn, message, counter.message(message), { sync: false });
  });
  files.sync();
  return entries;
}
