/**
 * A conversation as a host's loop holds it, matched against the log by message keys
 * (messageKey.ts). A host that runs workmem's tools itself (the AI SDK middleware) holds
 * their calls and results; one that never sees them (the proxy: its client gets only its
 * own calls and text) holds one assistant message where the log holds the model's answers
 * that called workmem's tools, their results and the answer after them. Both sides are
 * folded the same way, so that either kind of host matches the log: workmem's calls are
 * left out of an assistant message's key, their results join the element before them, and
 * an answer that follows workmem's results joins the answer that called them (its text
 * appended, as the proxy streams it to its client). An element keeps the positions of the
 * messages it stands for (log seqs, or a host's indices): a branch point, the trace.
 */
import { PLAIN_SHAPES, type AssistantMessage, type ChatMessage, type MessageShape } from './messages.js';
import { fingerprint, messageKey, sameKey, toolResultKey } from './messageKey.js';
import { ownNameOf } from '../tools/toolNaming.js';

/** workmem's own tools (memory, compact_history, item memory): the names sessionTools.ts gives them. */
export const WORKMEM_TOOL_NAMES: ReadonlySet<string> = new Set([
  'read',
  'write',
  'edit',
  'compact_history',
  'remember',
  'recall',
  'forget',
]);

/**
 * Which calls are workmem's own: its tools' names (those a session has) under the prefix they
 * were sent with (toolNaming.ts). A log that never recorded a naming holds them under their
 * own names, all of them.
 */
export class OwnToolNaming {
  static readonly DEFAULT = new OwnToolNaming('', WORKMEM_TOOL_NAMES);

  constructor(
    readonly prefix: string,
    readonly own: ReadonlySet<string>,
  ) {}

  isOwn(name: string): boolean {
    return ownNameOf(name, this.prefix, this.own) !== null;
  }

  /** Whether the two tell apart every one of `names` the same way. */
  agrees(other: OwnToolNaming, names: Iterable<string>): boolean {
    for (const name of names) if (this.isOwn(name) !== other.isOwn(name)) return false;
    return true;
  }
}

/** The log event that records a naming (acceptCall.ts appends it when the names change). */
export const TOOL_NAMES_EVENT = 'tool_names';

type Mask = (text: string) => string;

const NO_CALLS: readonly { id: string; name: string }[] = [];

/** How the next message folds in: a result of workmem's joins the last element, an answer after them joins the answer, else a new element. */
class Folder {
  /** Ids of workmem's calls, to know their results. */
  private readonly ours = new Set<string>();
  /** The last element is an answer whose last part called only workmem's tools: the next answer joins it. */
  open = false;

  constructor(private naming: OwnToolNaming) {}

  /** The names of the calls from here on. */
  name(naming: OwnToolNaming): void {
    this.naming = naming;
  }

  get names(): OwnToolNaming {
    return this.naming;
  }

  step(message: MessageShape, hasLast: boolean): 'hidden' | 'join' | 'new' {
    if (message.role === 'tool' && hasLast && this.ours.has(message.toolCallId ?? '')) return 'hidden';
    const joins = this.open && message.role === 'assistant';
    this.open = false;
    if (message.role !== 'assistant') return 'new';
    const calls = message.calls ?? NO_CALLS;
    let theirs = 0;
    for (const c of calls) {
      if (this.naming.isOwn(c.name)) this.ours.add(c.id);
      else theirs++;
    }
    this.open = theirs === 0 && calls.length > 0;
    return joins ? 'join' : 'new';
  }
}

/** A converted message's shape. */
export function shapeOf(message: ChatMessage): MessageShape {
  if (message.role === 'tool') return { role: 'tool', toolCallId: message.tool_call_id };
  if (message.role === 'assistant' && message.tool_calls)
    return { role: 'assistant', calls: message.tool_calls.map((c) => ({ id: c.id, name: c.function.name })) };
  return PLAIN_SHAPES[message.role];
}

/** An assistant message as a host sees it: workmem's calls left out. */
function visible(message: AssistantMessage, naming: OwnToolNaming): AssistantMessage {
  const calls = message.tool_calls?.filter((c) => !naming.isOwn(c.function.name)) ?? [];
  return { role: 'assistant', content: message.content, ...(calls.length ? { tool_calls: calls } : {}) };
}

/** Answers joined: texts appended in order, the host's calls gathered. */
export function joinAnswers(first: AssistantMessage, next: AssistantMessage): AssistantMessage {
  const content = (first.content ?? '') + (next.content ?? '') || null;
  const calls = [...(first.tool_calls ?? []), ...(next.tool_calls ?? [])];
  return { role: 'assistant', content, ...(calls.length ? { tool_calls: calls } : {}) };
}

export interface HostElement {
  key: string;
  /** The positions of the messages it stands for: log seqs, or a host's indices. */
  readonly at: number[];
  /** While an answer may still join it: the joined message its key is made of. */
  joined?: AssistantMessage;
}

/** The log's side, folded as messages are appended (each key computed once). */
export class HostLine {
  readonly elements: HostElement[] = [];
  private folder: Folder;

  constructor(
    private readonly mask: Mask = (text) => text,
    naming: OwnToolNaming = OwnToolNaming.DEFAULT,
  ) {
    this.folder = new Folder(naming);
  }

  get length(): number {
    return this.elements.length;
  }

  /** Which calls are workmem's from the next message on (a TOOL_NAMES_EVENT of the log). */
  get naming(): OwnToolNaming {
    return this.folder.names;
  }
  set naming(naming: OwnToolNaming) {
    this.folder.name(naming);
  }

  /** `print`: a host's tool result, the fingerprint of its text as the host sent it (the log keeps it capped). */
  add(message: ChatMessage, at: number, print?: string): void {
    const last = this.elements.at(-1);
    const how = this.folder.step(shapeOf(message), last !== undefined);
    if (how === 'hidden') {
      last!.at.push(at);
      return;
    }
    const naming = this.folder.names;
    if (how === 'join' && last?.joined && message.role === 'assistant') {
      const joined = joinAnswers(last.joined, visible(message, naming));
      last.key = messageKey(joined, this.mask);
      last.at.push(at);
      if (this.folder.open) last.joined = joined;
      else delete last.joined;
      return;
    }
    if (last) delete last.joined;
    const own = message.role === 'assistant' ? visible(message, naming) : message;
    const key = message.role === 'tool' && print !== undefined ? toolResultKey(message.tool_call_id, print) : messageKey(own, this.mask);
    this.elements.push({ key, at: [at], ...(this.folder.open ? { joined: own as AssistantMessage } : {}) });
  }

  /** Keep the first `count` elements: a branch drops the rest. */
  truncate(count: number): void {
    this.elements.length = Math.min(count, this.elements.length);
    const last = this.elements.at(-1);
    if (last) delete last.joined;
    this.folder = new Folder(this.folder.names); // the kept elements are whole: nothing joins them
  }
}

/** A host's conversation as HostSpans reads it (the machines' HostConversation). */
interface FoldedConversation {
  length: number;
  at(index: number): ChatMessage;
  shape?(index: number): MessageShape;
  identity?(index: number): unknown;
}

/**
 * The host's side, folded by roles and tool names alone: an element's key (a fingerprint of
 * its whole content, messageKey.ts) is computed only when it is compared, and kept from call
 * to call while the messages it stands for keep their identity (a host sends its whole
 * conversation on every call; most of it is known).
 */
export class HostSpans {
  /** starts[i]: the host index element i begins at; starts[length]: the conversation's length (room after it). */
  private readonly starts: Int32Array;
  readonly length: number;
  private readonly keys: (string | undefined)[];
  /** How the next message would fold in, after the last. */
  private readonly folder: Folder;
  /** What stood for the messages folded (the conversation's `identity`), kept to know them on the next call. */
  private readonly seen: unknown[] | null;

  /**
   * The conversation folded. A host whose messages have an identity and that begins this
   * call with every one `before` folded, unchanged, is folded on from there: a long
   * conversation costs what its new messages cost. Every message `before` held is compared
   * (a change anywhere is seen); the keys of the elements before the first changed message
   * are kept. `before` is taken over (its fold goes on in the new one): it is not to be used again.
   */
  static of(conversation: FoldedConversation, mask: Mask, before: HostSpans | null, naming = OwnToolNaming.DEFAULT): HostSpans {
    const identity = conversation.identity?.bind(conversation);
    const seen = before?.folder.names === naming ? before.seen : null;
    if (!identity || !seen || !before) return new HostSpans(conversation, mask, null, naming);
    // A pointer compare apiece while the host keeps its messages (or their texts) from call to call.
    const n = Math.min(seen.length, conversation.length);
    let changed = 0;
    while (changed < n && identity(changed) === seen[changed]) changed++;
    if (changed === seen.length) return new HostSpans(conversation, mask, before, naming);
    const fresh = new HostSpans(conversation, mask, null, naming);
    fresh.keep(before, changed);
    return fresh;
  }

  private constructor(
    private readonly conversation: FoldedConversation,
    private readonly mask: Mask,
    before: HostSpans | null,
    naming: OwnToolNaming,
  ) {
    const shape = conversation.shape ? conversation.shape.bind(conversation) : (i: number) => shapeOf(conversation.at(i));
    const n = conversation.length;
    // One array, however long the conversation: it is folded on every call. Folded on from
    // `before`, its array is taken over while it has room (a host's conversation grows by a
    // few messages a call); a new one has room to grow.
    let count = 0;
    let i = 0;
    if (!before) {
      this.starts = new Int32Array(n + 1);
      this.keys = [];
    } else {
      count = before.length;
      i = before.seen!.length;
      this.starts = before.starts.length > n ? before.starts : new Int32Array(Math.ceil((n + 1) * 1.5));
      if (this.starts !== before.starts) this.starts.set(before.starts.subarray(0, count));
      // The last element may grow (an answer joins it, a result of workmem's): its key is made again.
      this.keys = before.keys;
      this.keys.length = Math.max(0, count - 1);
    }
    this.folder = before?.folder ?? new Folder(naming);
    for (; i < n; i++) if (this.folder.step(shape(i), i > 0) === 'new' || i === 0) this.starts[count++] = i;
    this.starts[count] = n;
    this.length = count;
    const identity = conversation.identity?.bind(conversation);
    this.seen = identity ? (before?.seen ?? []) : null;
    if (identity) for (let j = this.seen!.length; j < n; j++) this.seen!.push(identity(j));
  }

  /** Keys of `before`'s elements that end before `changed` and were folded the same way. */
  private keep(before: HostSpans, changed: number): void {
    for (let i = 0; i < this.length && i < before.length - 1; i++) {
      if (this.end(i) > changed || this.start(i) !== before.start(i) || this.end(i) !== before.end(i)) break;
      const key = before.keys[i];
      if (key !== undefined) this.keys[i] = key;
    }
  }

  /** The host indices of element i: [start, end). */
  start(i: number): number {
    return this.starts[i]!;
  }
  end(i: number): number {
    return this.starts[i + 1]!;
  }

  key(i: number): string {
    let key = this.keys[i];
    if (key === undefined) {
      const naming = this.folder.names;
      let message = this.conversation.at(this.start(i));
      if (message.role === 'tool') key = toolResultKey(message.tool_call_id, fingerprint(this.mask(message.content)));
      else {
        if (message.role === 'assistant') message = visible(message, naming);
        for (let j = this.start(i) + 1; j < this.end(i); j++) {
          const m = this.conversation.at(j);
          // Results of workmem's calls are joined; answers after them are appended.
          if (m.role === 'assistant' && message.role === 'assistant') message = joinAnswers(message, visible(m, naming));
        }
        key = messageKey(message, this.mask);
      }
      this.keys[i] = key;
    }
    return key;
  }

  /** Whether element i is the log's element `element` (a key the log made before it kept prints matches by the call alone). */
  matches(i: number, element: HostElement): boolean {
    return sameKey(this.key(i), element.key);
  }
}
