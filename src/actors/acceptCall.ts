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
import { answerInterruptedCalls, unansweredCalls } from '../history/crashRecovery.js';
import { HostSpans, type HostElement, type HostLine, type OwnToolNaming } from '../history/hostLine.js';
import { fingerprint } from '../history/messageKey.js';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import { promptProblem } from '../llm/captureBounds.js';
import { neutraliseTags } from '../prompt/structuralTags.js';
import { yieldIfBusy } from '../runtime/fairYield.js';
import type { Redact } from '../secrets/redact.js';
import type { MessageEntry } from '../storage/messageLog.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { HostCallSent } from '../trace/hostMessages.js';
import type { Tool, ToolSpec } from '../tools/tool.js';

export interface AcceptCallDeps {
  record: SessionRecord;
  counter: TokenCounter;
  emit(event: SessionEvent): void;
  redact: Redact;
  /** The session's tools: workmem's own (their results reach the host already shaped, and are kept as they come back) named beside the host's. */
  tools: HostCallTools;
  /** Caps a host tool's output as the tool runner does. */
  capture(call: ToolCall, content: string, turn: number): Promise<string>;
  /** The system prompt for the host's instructions, the names of the tools it sends and the prefix of workmem's. */
  systemPromptFor(instructions: string | undefined, toolNames: string[], toolPrefix: string): string;
  /** The trace's record of what the host sent: the log messages its conversation stands for. */
  traceHost?(call: HostCallSent): void;
}

/** What acceptCall needs of the session's tools (sessionTools.ts). */
export interface HostCallTools {
  readonly own: readonly Tool[];
  readonly all: readonly Tool[];
  readonly prefix: string;
  readonly naming: OwnToolNaming;
  isOwn(name: string): boolean;
  nameBeside(hostNames: Iterable<string>): string;
}

export function hostCallAcceptor(deps: AcceptCallDeps): (input: AcceptCallInput) => Promise<AcceptCallOutput> {
  const { record, counter } = deps;
  // The same system prompt and tool list objects while they do not change, so the prompt base is kept.
  let statics: {
    key: string;
    instructions: string | undefined;
    /** The specs the key was last found for. */
    given: readonly ToolSpec[];
    prefix: string;
    systemPrompt: string;
    tools: readonly ToolSpec[];
  } | null = null;
  // The last call's conversation folded, for a host whose messages have an identity (HostSpans.of).
  let folded: HostSpans | null = null;

  return async ({ call, turn: current }) => {
    const { instructions, conversation } = call;
    // The call's tools are the host's own: workmem's are named beside them (toolNaming.ts) and sent first.
    const prefix =
      statics && sameObjects(statics.given, call.tools) ? statics.prefix : deps.tools.nameBeside(call.tools.map((t) => t.name));
    // A host mostly sends the same spec objects each call (the middleware keep theirs): no text to compare then.
    if (!statics || statics.instructions !== instructions || statics.prefix !== prefix || !sameObjects(statics.given, call.tools)) {
      const key = `${instructions ?? ''}\u0000${prefix}\u0000${JSON.stringify(call.tools)}`;
      if (statics?.key !== key) {
        const tools = [...deps.tools.own.map((t) => (prefix ? { ...t.spec, name: prefix + t.name } : t.spec)), ...call.tools];
        statics = {
          key,
          instructions,
          given: call.tools,
          prefix,
          systemPrompt: deps.systemPromptFor(
            instructions,
            tools.map((t) => t.name),
            prefix,
          ),
          tools,
        };
      } else statics = { ...statics, instructions, given: call.tools };
    }
    // The log's calls are told apart under the names they were made with: a new naming is recorded first.
    const naming = deps.tools.naming;
    if (!record.hostLine.naming.agrees(naming, namesOf(statics.tools))) await record.nameTools(current, naming);

    let turn = current;
    let opened: string | null = null;
    // The last fold is taken over (HostSpans.of goes on with it): one that throws part-way is never resumed.
    const before = folded;
    folded = null;
    const spans = HostSpans.of(conversation, deps.redact, before, naming);
    folded = conversation.identity ? spans : null;
    const { from, branch, elements } = known(conversation, spans, record.hostLine, call.whole === true);
    if (branch) {
      await record.appendBranch({ type: 'branch', turn, ...branch });
      // The active turn is the one the branch kept last, until the host's next message opens another.
      const history = record.history;
      turn = history.length ? history.items[history.length - 1]!.turn : 0;
    }
    // What is new is taken in a slice at a time (a conversation seen for the first time may be
    // 20k messages): appended in batches, one sync at the end, the message_end events after it.
    const intake = new Intake(record);
    try {
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
          if (intake.leavesCallsOpen()) {
            // In log order: what was taken in so far, then the answers of the calls it left open.
            await announce(await intake.flush(true));
            await announce(await answerInterruptedCalls(record, counter));
          }
          turn = Math.max(turn, current) + 1;
          opened = message.content;
        } else if (turn === 0) turn = 1;
        const kept =
          message.role === 'tool'
            ? { ...message, content: neutraliseTags(await shaped(intake.callOf(message.tool_call_id), message.content, turn)) }
            : message;
        // A result is known by its text as the host sent it: the log keeps that text's fingerprint beside its capped copy.
        const print = message.role === 'tool' ? fingerprint(deps.redact(message.content)) : undefined;
        intake.add({ turn, message: kept, tokens: counter.message(kept), pinned, ...(print ? { print } : {}) });
        if (intake.full) await intake.flush(false);
        await yieldIfBusy();
      }
    } catch (error) {
      // A message refused: those before it are kept, as they would have been one by one.
      await announce(await intake.flush(true).catch(() => []));
      throw error;
    }
    await announce(await intake.flush(true));
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
      ...(statics.prefix ? { toolPrefix: statics.prefix } : {}),
    };
  };

  /** message_end for messages appended (durably), a slice at a time: each is traced and sent to every listener. */
  async function announce(entries: readonly MessageEntry[]): Promise<void> {
    for (const { turn, seq, tokens, message, pinned } of entries) {
      deps.emit({ type: 'message_end', turn, request: 0, seq, tokens, message, ...(pinned ? { pinned } : {}) });
      await yieldIfBusy();
    }
  }

  /** A host tool's output capped as the tool runner caps it; workmem's own came back as it was given. */
  async function shaped(call: ToolCall | null, content: string, turn: number): Promise<string> {
    return call && !deps.tools.isOwn(call.function.name) ? deps.capture(call, content, turn) : content;
  }
}

/** Messages of a batch: a few hundred KB of JSON a write, so that no one step holds the loop long. */
const BATCH_MESSAGES = 256;
const BATCH_CHARS = 256 * 1024;

type Taken = { turn: number; message: ChatMessage; tokens: number; pinned: boolean; print?: string };

/**
 * A host's new messages on their way to the log: batched, each batch one write, the last
 * one synced. What is batched counts as the history's tip for the questions intake asks
 * (which calls are open, which call a result answers).
 */
class Intake {
  private batch: Taken[] = [];
  private chars = 0;
  /** The calls open at the tip (the history's, then the batch's), as unansweredCalls reads it. */
  private readonly open: Set<string>;
  private readonly written: MessageEntry[] = [];

  constructor(private readonly record: SessionRecord) {
    this.open = new Set(unansweredCalls(record.history)?.calls.map((c) => c.id));
  }

  get full(): boolean {
    return this.batch.length >= BATCH_MESSAGES || this.chars >= BATCH_CHARS;
  }

  add(taken: Taken): void {
    this.batch.push(taken);
    const { message } = taken;
    this.chars +=
      message.role === 'assistant' ? (message.content?.length ?? 0) + 64 * (message.tool_calls?.length ?? 0) : message.content.length;
    // As unansweredCalls reads the tip: the last assistant message's calls, less the results after it.
    if (message.role === 'tool') this.open.delete(message.tool_call_id);
    else this.open.clear();
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) this.open.add(call.id);
  }

  /** Whether the history, with the batch at its tip, ends on calls without results (a user message then answers them as interrupted). */
  leavesCallsOpen(): boolean {
    return this.open.size > 0;
  }

  /** The call a result answers, looked up from the tip (it is in the active turn). */
  callOf(id: string): ToolCall | null {
    for (let i = this.batch.length - 1; i >= 0; i--) {
      const found = callIn(this.batch[i]!.message, id);
      if (found) return found;
    }
    const history = this.record.history;
    for (let i = history.length - 1; i >= 0; i--) {
      const found = callIn(history.items[i]!.message, id);
      if (found) return found;
    }
    return null;
  }

  /**
   * Append the batch; `durable`: synced, and every message written since the last durable
   * flush is returned, for its message_end.
   */
  async flush(durable: boolean): Promise<MessageEntry[]> {
    const batch = this.batch;
    this.batch = [];
    this.chars = 0;
    if (batch.length) this.written.push(...(await this.record.appendMessages(batch, { sync: durable })));
    else if (durable && this.written.length) await this.record.sync();
    if (!durable) return [];
    return this.written.splice(0);
  }
}

function callIn(message: ChatMessage, id: string): ToolCall | undefined {
  return message.role === 'assistant' ? message.tool_calls?.find((c) => c.id === id) : undefined;
}

function namesOf(tools: readonly ToolSpec[]): string[] {
  return tools.map((t) => t.name);
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
 * its end), or nothing (only what is new). Every element is compared by its key, a
 * fingerprint of its whole content: a change anywhere is seen. A host that departs from the
 * log — it edited or regenerated a message, or compacted its own history — takes a branch
 * at the first element that differs: the log's messages after the last element both hold
 * are left behind, the host's that follow are new. A host that sends its whole conversation
 * (`whole`) branches wherever it departs; another, once it has matched the log's first two
 * elements, or when what follows its first differing element is the log's again at the same
 * places (an edit in place of its first or second message: before them it may be sending
 * only what is new). The last element both hold may have grown in the host's copy (the
 * results of workmem's tools that it ran): those are new too.
 */
function known(host: HostConversation, spans: HostSpans, line: HostLine, whole: boolean): Known {
  const n = line.length;
  const h = spans.length;
  if (n === 0 || host.length === 0) return { from: 0, elements: h };
  const log = line.elements;
  const same = (i: number, e: HostElement): boolean => spans.matches(i, e);
  /** Past host element e, which is the log's last: what the log holds of it is known. */
  const through = (e: number): Known => ({ from: Math.min(spans.end(e), spans.start(e) + log[n - 1]!.at.length), elements: h });
  let c = 0;
  while (c < Math.min(h, n) && same(c, log[c]!)) c++;
  if (c === n) return through(n - 1);
  // A window of the log's end: its last k elements, then new ones.
  for (let k = Math.min(h, n); k > 0; k--) {
    if (!same(k - 1, log[n - 1]!) || !same(0, log[n - k]!)) continue;
    let ok = true;
    for (let i = 1; i < k - 1 && ok; i++) ok = same(i, log[n - k + i]!);
    if (ok) return through(k - 1);
  }
  if (!whole && c < 2 && !(c + 1 < Math.min(h, n) && same(c + 1, log[c + 1]!))) return { from: 0, elements: h };
  let dropped = 0;
  for (let i = c; i < n; i++) dropped += log[i]!.at.length;
  const after = c === 0 ? 0 : Math.max(...log[c - 1]!.at);
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
  const last = line.elements.at(-1)!;
  for (let p = spans.length - 1; p > departs; p--) if (spans.matches(p, last)) return true;
  return false;
}
