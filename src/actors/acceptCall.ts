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
import { HostSpans, type HostLine } from '../history/hostLine.js';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import { promptProblem } from '../llm/captureBounds.js';
import { neutraliseTags } from '../prompt/structuralTags.js';
import type { Redact } from '../secrets/redact.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { HostCallSent } from '../trace/hostMessages.js';
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
  /** The trace's record of what the host sent: the log messages its conversation stands for. */
  traceHost?(call: HostCallSent): void;
}

export function hostCallAcceptor(deps: AcceptCallDeps): (input: AcceptCallInput) => Promise<AcceptCallOutput> {
  const { record, counter } = deps;
  // The same system prompt and tool list objects while they do not change, so the prompt base is kept.
  let statics: {
    key: string;
    instructions: string | undefined;
    /** The specs the key was last found for. */
    given: readonly ToolSpec[];
    systemPrompt: string;
    tools: readonly ToolSpec[];
  } | null = null;
  // The last call's conversation folded, for a host whose messages have an identity (HostSpans.of).
  let folded: HostSpans | null = null;

  return async ({ call, turn: current }) => {
    const { instructions, conversation } = call;
    // A host mostly sends the same spec objects each call (the middleware keep theirs): no text to compare then.
    if (!statics || statics.instructions !== instructions || !sameObjects(statics.given, call.tools)) {
      const key = `${instructions ?? ''}\u0000${JSON.stringify(call.tools)}`;
      if (statics?.key !== key)
        statics = {
          key,
          instructions,
          given: call.tools,
          systemPrompt: deps.systemPromptFor(
            instructions,
            call.tools.map((t) => t.name),
          ),
          tools: call.tools,
        };
      else statics = { ...statics, instructions, given: call.tools };
    }

    let turn = current;
    let opened: string | null = null;
    // The last fold is taken over (HostSpans.of goes on with it): one that throws part-way is never resumed.
    const before = folded;
    folded = null;
    const spans = HostSpans.of(conversation, deps.redact, before);
    folded = conversation.identity ? spans : null;
    const { from, branch, elements } = known(conversation, spans, record.hostLine, call.whole === true);
    if (branch) {
      await record.appendBranch({ type: 'branch', turn, ...branch });
      // The active turn is the one the branch kept last, until the host's next message opens another.
      const history = record.history;
      turn = history.length ? history.items[history.length - 1]!.turn : 0;
    }
    for (let i = from; i < conversation.length; i++) {
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
        turn = Math.max(turn, current) + 1;
        opened = message.content;
      } else if (turn === 0) turn = 1;
      const kept =
        message.role === 'tool'
          ? { ...message, content: neutraliseTags(await shaped(message.tool_call_id, message.content, turn)) }
          : message;
      const entry = await record.appendMessage(turn, kept, counter.message(kept), { sync: true, pinned });
      ended(turn, entry.seq, entry.tokens, kept, pinned);
    }
    if (deps.traceHost) {
      // The host's conversation is the line's last elements: those it matched, then those it brought.
      const line = record.hostLine.elements;
      const sent = conversation.length + (instructions === undefined ? 0 : 1);
      deps.traceHost({ turn, instructions, elements: line, from: Math.max(0, line.length - elements), sent });
    }
    // A host loop opened for this call, in the middle of a turn (the proxy opens its session per
    // request): the turn the log holds goes on, opened again in this session.
    if (opened === null && call.resume === true) opened = activeTurnText(record);
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

function sameObjects(a: readonly object[], b: readonly object[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The user message that opened the turn at the tip of the history ('' when there is none). */
function activeTurnText(record: SessionRecord): string {
  const history = record.history;
  for (let i = history.length - 1; i >= 0; i--) {
    const message = history.items[i]!.message;
    if (message.role === 'user') return message.content;
  }
  return '';
}

/** Where the host's new messages start, and the branch its conversation takes from the log's, if it departs. */
interface Known {
  from: number;
  /** The host's conversation, folded: how many elements. */
  elements: number;
  branch?: { after: number; dropped: number; reason: 'edited' | 'compacted' };
}

/**
 * What of the host's conversation the log already holds, both folded (hostLine.ts): all it
 * holds (the whole conversation and more), the log's last k elements and more (a window of
 * its end), or nothing (only what is new). A host that departs from the log — it edited
 * or regenerated a message, or compacted its own history — takes a branch: the log's
 * messages after the last element both hold are left behind, the host's that follow are
 * new. A host that sends its whole conversation (`whole`) branches wherever it departs;
 * another, once it has matched the log's first two elements (before them it may be sending
 * only what is new). The last element both hold may have grown in the host's copy (the
 * results of workmem's tools that it ran): those are new too.
 */
function known(host: HostConversation, spans: HostSpans, line: HostLine, whole: boolean): Known {
  const n = line.length;
  const h = spans.length;
  if (n === 0 || host.length === 0) return { from: 0, elements: h };
  const logKey = (i: number): string => line.elements[i]!.key;
  /** Past host element e, which is the log's last: what the log holds of it is known. */
  const through = (e: number): Known => ({ from: Math.min(spans.end(e), spans.start(e) + line.elements[n - 1]!.at.length), elements: h });
  if (h >= n && spans.key(n - 1) === logKey(n - 1) && spans.key(0) === logKey(0)) return through(n - 1);
  for (let k = Math.min(h, n); k > 0; k--) {
    if (spans.key(k - 1) !== logKey(n - 1) || spans.key(0) !== logKey(n - k)) continue;
    let same = true;
    for (let i = 1; i < k - 1 && same; i++) same = spans.key(i) === logKey(n - k + i);
    if (same) return through(k - 1);
  }
  let c = 0;
  while (c < Math.min(h, n) && spans.key(c) === logKey(c)) c++;
  if (!whole && c < 2) return { from: 0, elements: h };
  let dropped = 0;
  for (let i = c; i < n; i++) dropped += line.elements[i]!.at.length;
  const after = c === 0 ? 0 : Math.max(...line.elements[c - 1]!.at);
  return {
    from: c < h ? spans.start(c) : host.length,
    elements: h,
    branch: { after, dropped, reason: keptTail(spans, line, c) ? 'compacted' : 'edited' },
  };
}

/**
 * A host that compacted its own history replaced earlier messages (by a summary, say) and
 * kept its recent ones: after where it departs, new messages are followed by a run that
 * ends as the log ends. One that edited or regenerated a message has no such run.
 */
function keptTail(spans: HostSpans, line: HostLine, departs: number): boolean {
  const last = line.elements.at(-1)!.key;
  for (let p = spans.length - 1; p > departs; p--) if (spans.key(p) === last) return true;
  return false;
}
