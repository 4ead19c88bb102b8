/**
 * Which session a request belongs to when the client names none (no `x-workmem-session`, no
 * `user`): the one that holds what the request holds (docs/proxy.md, "Sessions"). Every
 * answer the proxy gives is kept in the state store under a key that chains it to the
 * answers before it in the client's conversation (the answers, not the client's own
 * messages: an opening the client changes between runs, a date line, changes no key), with
 * the session it was given in and a sketch of the instructions it was given under. A
 * request is placed by the last answer it holds that the proxy gave:
 *
 * - none: a conversation's first request. With tools (an agent's turn) it opens a new
 *   session. Without (a one-shot: a title asked for over the conversation's first message)
 *   it is passed through without a session; its answer is kept, and a request that
 *   continues it (a chat client without tools goes on) opens the session then;
 * - one given under other instructions (fewer than half their lines the same), or one a
 *   side request was given: a side request (a background extraction over the
 *   conversation's messages, say): passed through, never reading or writing the memory;
 * - one given in a session: that session, where an edit is followed as a branch, unless the
 *   session went on past it and that answer was given more than once (two conversations
 *   that were the same so far and part here): a new session then, from that message on.
 *
 * Each session keeps its last KEPT answers' keys; older ones are let go.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { HostConversation } from '../../machines/sessionTypes.js';
import type { AssistantMessage } from '../history/messages.js';
import { fingerprint } from '../history/messageKey.js';
import { sessionIdFor } from '../session/sessionName.js';
import type { StateStore } from '../storage/stateStore.js';

/** How many of a session's answers stay findable (an edit behind them starts a conversation anew). */
const KEPT = 32;
/** How many of a request's answers are looked up, from its last. */
const LOOKED_UP = 16;
/** Answers given without a session (first requests, side requests) are let go after this. */
export const PASSED_KEPT_MS = 30 * 24 * 3600_000;

const ANSWER = 'conversation:';
const SESSION = 'conversation-session:';

/** Where a request goes. */
export type Placement =
  | { kind: 'pass'; why: 'first' | 'side'; chain: string }
  | { kind: 'session'; id: string; chain: string; why: 'new' | 'continues' | 'opens' | 'parts' };

interface AnswerEntry {
  /** The session it was given in; null: given to a request passed through. */
  session: string | null;
  /** Given to a side request. */
  side?: true;
  /** How many times it was given (more than once: conversations the same so far). */
  given: number;
  /** The instructions it was given under, sketched. */
  sketch: string;
  at: number;
}

interface SessionEntry {
  /** Its answers' keys, the last one its tip. */
  answers: string[];
}

export class ConversationIndex {
  constructor(
    private readonly state: StateStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Where a request with these instructions, this conversation and (or not) tools of its own goes. */
  async place(instructions: string | undefined, conversation: HostConversation, withTools: boolean): Promise<Placement> {
    const chains = answerChain(conversation);
    const chain = chains.at(-1) ?? '';
    const sketch = instructionsSketch(instructions ?? '');
    for (let i = chains.length - 1; i >= Math.max(0, chains.length - LOOKED_UP); i--) {
      const key = chains[i]!;
      const entry = await this.state.get<AnswerEntry>(ANSWER + key);
      if (!entry) continue;
      if (entry.side || !sameInstructions(sketch, entry.sketch)) return { kind: 'pass', why: 'side', chain };
      if (entry.session === null) return { kind: 'session', id: sessionIdFor(`conversation:${key}`), chain, why: 'opens' };
      const held = await this.state.get<SessionEntry>(SESSION + entry.session);
      const tip = held?.answers.at(-1);
      // The session went on past this answer: an edit or a regeneration, or another conversation that was the same so far.
      if (tip !== undefined && tip !== key && entry.given > 1) return { kind: 'session', id: randomUUID(), chain, why: 'parts' };
      return { kind: 'session', id: entry.session, chain, why: 'continues' };
    }
    return withTools ? { kind: 'session', id: randomUUID(), chain, why: 'new' } : { kind: 'pass', why: 'first', chain };
  }

  /** The client was answered: `answer` as it holds it, given where `placement` said (in `session` when one took it). */
  async answered(placement: Placement, instructions: string | undefined, answer: AssistantMessage, session: string | null): Promise<void> {
    const key = chained(placement.chain, answerKey(answer));
    const before = await this.state.get<AnswerEntry>(ANSWER + key);
    const side = placement.kind === 'pass' && placement.why === 'side';
    // The session an answer was first given in keeps it (conversations the same so far go on there, or part).
    const entry: AnswerEntry = {
      session: side ? null : (before?.session ?? session ?? null),
      ...(side ? { side: true as const } : {}),
      given: (before?.given ?? 0) + 1,
      sketch: instructionsSketch(instructions ?? ''),
      at: this.now(),
    };
    await this.state.set(ANSWER + key, entry);
    if (!session) return;
    // The answer a session was opened from (a first request's) now names it: a request holding only that one finds it.
    if (placement.kind === 'session' && placement.why === 'opens' && placement.chain) {
      const opened = await this.state.get<AnswerEntry>(ANSWER + placement.chain);
      if (opened && opened.session === null) await this.state.set(ANSWER + placement.chain, { ...opened, session });
    }
    const held = (await this.state.get<SessionEntry>(SESSION + session)) ?? { answers: [] };
    const answers = [...held.answers.filter((k) => k !== key), key];
    const dropped = answers.splice(0, Math.max(0, answers.length - KEPT));
    await this.state.set(SESSION + session, { answers });
    for (const old of dropped) {
      const gone = await this.state.get<AnswerEntry>(ANSWER + old);
      if (gone?.session === session) await this.state.delete(ANSWER + old);
    }
  }

  /** Let go of answers given without a session long ago (first requests never continued, side requests). */
  async sweep(): Promise<number> {
    let swept = 0;
    const until = this.now() - PASSED_KEPT_MS;
    for (const [key, entry] of await this.state.entries<AnswerEntry>(ANSWER))
      if (entry.session === null && entry.at < until) {
        await this.state.delete(key);
        swept++;
      }
    return swept;
  }

  /** A session is gone: its answers with it. */
  async forget(session: string): Promise<void> {
    const held = await this.state.get<SessionEntry>(SESSION + session);
    for (const key of held?.answers ?? []) await this.state.delete(ANSWER + key);
    await this.state.delete(SESSION + session);
  }
}

/** An answer as a client holds it: by its calls' ids, else by its text. */
export function answerKey(message: AssistantMessage): string {
  return message.tool_calls?.length ? `c:${message.tool_calls.map((c) => c.id).join(',')}` : `t:${fingerprint(message.content ?? '')}`;
}

function chained(before: string, key: string): string {
  return createHash('sha256').update(before).update('\u0000').update(key).digest('hex').slice(0, 32);
}

/** The chained key of each of the conversation's assistant messages, in order. */
export function answerChain(conversation: HostConversation): string[] {
  const keys: string[] = [];
  let chain = '';
  for (let i = 0; i < conversation.length; i++) {
    const shape = conversation.shape?.(i);
    if (shape ? shape.role !== 'assistant' : conversation.at(i).role !== 'assistant') continue;
    const message = conversation.at(i) as AssistantMessage;
    chain = chained(chain, answerKey(message));
    keys.push(chain);
  }
  return keys;
}

/** Lines of instructions kept in a sketch: the smallest hashes of their distinct lines (a bottom-k sketch). */
const SKETCH_LINES = 32;

/** Instructions, sketched: which of their lines they hold, told apart from other instructions in a few hundred bytes. */
export function instructionsSketch(text: string): string {
  const hashes = new Set<number>();
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed) hashes.add(lineHash(trimmed));
  }
  return [...hashes]
    .sort((a, b) => a - b)
    .slice(0, SKETCH_LINES)
    .map((h) => h.toString(36))
    .join(',');
}

/** At least half the lines of both in common (estimated from the sketches), or both empty. */
export function sameInstructions(a: string, b: string): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  const x = new Set(a.split(','));
  const y = new Set(b.split(','));
  const union = [...new Set([...x, ...y])].map((h) => parseInt(h, 36)).sort((p, q) => p - q);
  const smallest = union.slice(0, SKETCH_LINES);
  const both = smallest.filter((h) => x.has(h.toString(36)) && y.has(h.toString(36))).length;
  return both * 2 >= smallest.length;
}

function lineHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
