/**
 * The acceptCall actor: one model call of a host's own loop (the AI SDK or LangChain
 * middleware, the proxy) arrives with every message the host's loop holds. What the log
 * already has is recognised by message keys (messageKey.ts) — the host may send its whole
 * conversation, a window of its end, or only what is new — and the rest is recorded as a
 * Session would have recorded it: a user message opens a turn (calls left unanswered first
 * get their "interrupted" results), a host tool's output is capped and its tags neutralised
 * as the tool runner does, each appended durably before its message_end. The host's system
 * messages are its instructions: the system prompt is built from them and the tools it sends.
 */
import type { AcceptCallInput, AcceptCallOutput, HostConversation } from '../../machines/sessionMachine.js';
import type { SessionEvent } from '../events.js';
import { answerInterruptedCalls } from '../history/crashRecovery.js';
import { messageKey } from '../history/messageKey.js';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import { promptProblem } from '../llm/captureBounds.js';
import { neutraliseTags } from '../prompt/structuralTags.js';
import type { Redact } from '../secrets/redact.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { ToolSpec } from '../tools/tool.js';

export interface AcceptCallDeps {
  record: SessionRecord;
  counter: TokenCounter;
  emit(event: SessionEvent): void;
  redact: Redact;
  /** workmem's own tools: their results reach the host already shaped, and are kept as they come back. */
  builtIn: ReadonlySet<string>;
  /** Caps a host tool's output as the tool runner does. */
  capture(call: ToolCall, content: string, turn: number): Promise<string>;
  /** The system prompt for the host's instructions and the names of the tools it sends. */
  systemPromptFor(instructions: string | undefined, toolNames: string[]): string;
}

/** The host's messages do not continue the session's log: it edited or dropped messages the log holds. */
export class DivergedHistoryError extends Error {
  override name = 'DivergedHistoryError';
}

export function hostCallAcceptor(deps: AcceptCallDeps): (input: AcceptCallInput) => Promise<AcceptCallOutput> {
  const { record, counter } = deps;
  // The same system prompt and tool list objects while they do not change, so the prompt base is kept.
  let statics: { key: string; systemPrompt: string; tools: readonly ToolSpec[] } | null = null;

  return async ({ call, turn: current }) => {
    const { instructions, conversation } = call;
    const key = `${instructions ?? ''}\u0000${JSON.stringify(call.tools)}`;
    if (statics?.key !== key)
      statics = {
        key,
        systemPrompt: deps.systemPromptFor(
          instructions,
          call.tools.map((t) => t.name),
        ),
        tools: call.tools,
      };

    let turn = current;
    let opened: string | null = null;
    for (let i = known(conversation, record.messageKeys, deps.redact); i < conversation.length; i++) {
      const message = conversation.at(i);
      const pinned = conversation.pinned?.(i) === true;
      if (pinned && message.role !== 'user')
        throw new TypeError(
          `message ${i + 1} of the conversation is marked pinned, but only a user message can be pinned (its role is ${message.role})`,
        );
      if (message.role === 'user') {
        const tooLarge = promptProblem(message.content);
        if (tooLarge) throw new RangeError(tooLarge);
        for (const entry of await answerInterruptedCalls(record, counter)) ended(entry.turn, entry.seq, entry.tokens, entry.message);
        turn += 1;
        opened = message.content;
      } else if (turn === 0) turn = 1;
      const kept =
        message.role === 'tool'
          ? { ...message, content: neutraliseTags(await shaped(message.tool_call_id, message.content, turn)) }
          : message;
      const entry = await record.appendMessage(turn, kept, counter.message(kept), { sync: true, pinned });
      ended(turn, entry.seq, entry.tokens, kept, pinned);
    }
    return {
      history: record.history,
      turn,
      opened: opened === null ? null : { text: opened },
      systemPrompt: statics.systemPrompt,
      tools: statics.tools,
    };
  };

  function ended(turn: number, seq: number, tokens: number, message: ChatMessage, pinned = false): void {
    deps.emit({ type: 'message_end', turn, request: 0, seq, tokens, message, ...(pinned ? { pinned } : {}) });
  }

  /** A host tool's output capped as the tool runner caps it; workmem's own came back as it was given. */
  async function shaped(callId: string, content: string, turn: number): Promise<string> {
    const call = callOf(callId);
    return call && !deps.builtIn.has(call.function.name) ? deps.capture(call, content, turn) : content;
  }

  /** The call a result answers, looked up from the tip (it is in the active turn). */
  function callOf(id: string): ToolCall | null {
    for (let i = record.history.length - 1; i >= 0; i--) {
      const message = record.history.items[i]!.message;
      const found = message.role === 'assistant' ? message.tool_calls?.find((c) => c.id === id) : undefined;
      if (found) return found;
    }
    return null;
  }
}

/**
 * How many of the host's messages the log already holds, from its start: all it holds
 * (the whole conversation and more), the log's last k and more (a window of its end, or
 * only what is new: 0). A host that starts as the log does but departs from it edited or
 * dropped messages the log holds: refused, the log is never rewritten.
 */
function known(host: HostConversation, keys: readonly string[], mask: Redact): number {
  const n = keys.length;
  if (n === 0 || host.length === 0) return 0;
  const hostKeys: (string | undefined)[] = [];
  const key = (i: number): string => (hostKeys[i] ??= messageKey(host.at(i), mask));
  if (host.length >= n && key(n - 1) === keys[n - 1] && key(0) === keys[0]) return n;
  for (let k = Math.min(host.length, n); k > 0; k--) {
    if (key(k - 1) !== keys[n - 1] || key(0) !== keys[n - k]) continue;
    let same = true;
    for (let i = 1; i < k - 1 && same; i++) same = key(i) === keys[n - k + i];
    if (same) return k;
  }
  if (host.length > 1 && n > 1 && key(0) === keys[0] && key(1) === keys[1]) {
    let at = 2;
    while (at < Math.min(host.length, n) && key(at) === keys[at]) at++;
    throw new DivergedHistoryError(
      `the messages sent depart from the session's log at message ${at + 1} of ${host.length} (the log holds ${n}): ` +
        'a conversation that was edited or regenerated goes on in a new session, or sends only what is new',
    );
  }
  return 0;
}
