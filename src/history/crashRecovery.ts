/**
 * What opening a session does after a crash, beyond what the files repair themselves
 * (a torn last log line skipped, meta.json rebuilt, temporary files removed): a turn
 * killed — or stopped by a failed write — between a model response and its tool results
 * leaves tool calls without results, which no model API accepts. Each gets a result
 * saying it was interrupted, appended to the log like any other, so the history is a
 * valid message list again. Done when a session opens and before each new user message.
 *
 * A damaged, missing or reordered line anywhere else does the same in the middle of the
 * history: on open, every call without a result gets one placed right after its group,
 * and every result no open call asked for is set aside — by repair entries appended to
 * the log (never a rewrite) and reported in damage.json.
 */
import type { HistoryView } from './historyView.js';
import type { MessageEntry } from '../storage/messageLog.js';
import type { ToolCall, ToolMessage } from './messages.js';
import { describeRepair, type Repair } from '../storage/sessionMeta.js';
import type { SessionRecord } from './sessionRecord.js';
import type { TokenCounter } from '../tokens/tokens.js';

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
export async function answerInterruptedCalls(record: SessionRecord, counter: TokenCounter): Promise<MessageEntry[]> {
  const open = unansweredCalls(record.history);
  if (!open) return [];
  const entries: MessageEntry[] = [];
  for (const call of open.calls) {
    const message = { role: 'tool' as const, tool_call_id: call.id, content: INTERRUPTED_RESULT };
    entries.push(await record.appendMessage(open.turn, message, counter.message(message), { sync: false }));
  }
  await record.sync();
  return entries;
}

interface CallGroup {
  /** The seq of the group's last item (its call, or its last result so far). */
  last: number;
  turn: number;
  open: ToolCall[];
}

/** Calls and results that do not pair, before the history's last group (the tail is answerInterruptedCalls's). */
function unpaired(view: HistoryView): { unanswered: CallGroup[]; orphans: { seq: number; turn: number; message: ToolMessage }[] } {
  const unanswered: CallGroup[] = [];
  const orphans: { seq: number; turn: number; message: ToolMessage }[] = [];
  let group: CallGroup | null = null;
  for (const item of view.items.slice(0, view.length)) {
    const message = item.message;
    if (message.role === 'tool') {
      const at = group ? group.open.findIndex((c) => c.id === message.tool_call_id) : -1;
      if (group && at >= 0) {
        group.open.splice(at, 1);
        group.last = item.seq;
      } else orphans.push({ seq: item.seq, turn: item.turn, message });
      continue;
    }
    if (group?.open.length) unanswered.push(group);
    group =
      message.role === 'assistant' && message.tool_calls?.length
        ? { last: item.seq, turn: item.turn, open: [...message.tool_calls] }
        : null;
  }
  return { unanswered, orphans };
}

/**
 * Pair every call with a result again: orphan results set aside (or moved after their
 * call, when it is unanswered: a reordered line), calls without results answered as
 * interrupted, all by appending. Returns what was done, also recorded in damage.json.
 */
export async function repairPairing(record: SessionRecord, counter: TokenCounter): Promise<string[]> {
  const { unanswered, orphans } = unpaired(record.history);
  const repairs: Repair[] = [];
  const moved = new Map<string, ToolMessage>();
  for (const orphan of orphans) {
    await record.appendRepair({ type: 'repair', turn: orphan.turn, setAside: orphan.seq });
    const callId = orphan.message.tool_call_id;
    const home = unanswered.some((g) => g.open.some((c) => c.id === callId)) && !moved.has(callId);
    if (home) moved.set(callId, orphan.message);
    repairs.push({
      what: `a tool result for ${JSON.stringify(callId.slice(0, 64))} that no open call asked for`,
      where: `messages.jsonl seq ${orphan.seq} (turn ${orphan.turn})`,
      done: home ? 'moved after its call' : 'set aside (kept in the log, out of the history)',
    });
  }
  for (const group of unanswered) {
    let after = group.last;
    for (const call of group.open) {
      const message: ToolMessage = moved.get(call.id) ?? { role: 'tool', tool_call_id: call.id, content: INTERRUPTED_RESULT };
      const entry = await record.appendRepair({
        type: 'repair',
        turn: group.turn,
        answer: { after, message, tokens: counter.message(message) },
      });
      after = entry.seq;
      if (!moved.has(call.id))
        repairs.push({
          what: `tool call ${JSON.stringify(call.id.slice(0, 64))} (${call.function.name.slice(0, 64)}) without a result`,
          where: `messages.jsonl after seq ${group.last} (turn ${group.turn})`,
          done: 'answered "interrupted" right after its call',
        });
    }
  }
  const tail = unansweredCalls(record.history);
  const interrupted = (await answerInterruptedCalls(record, counter)).length;
  if (tail && interrupted)
    repairs.push({
      what: `the last turn was interrupted: ${interrupted} tool call(s) without a result`,
      where: `turn ${tail.turn}`,
      done: 'answered as interrupted',
    });
  await record.sync();
  await record.recordRepairs(repairs);
  return repairs.map(describeRepair);
}
