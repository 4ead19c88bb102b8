/**
 * What each request sent, for the visualizer's context view, at a size a long session can
 * afford: every body is traced once. A `system` record holds the system message when it
 * changes (it changes with the memory), a `message` record each history message the first
 * time a request carries it (by its messages.jsonl seq; again if a compaction stubs it in
 * place), and one `request` record per
 * request names them: the system message by its hash, the history by runs of seqs (the
 * pinned messages sent before the history a mode carries first, as they are sent), and
 * the tail (context_meta, reminder) appended to the last message, whole. With the memory
 * after the history, the `system` record also holds the memory block put before the last
 * message (`memory`), since it changes with the memory as the system message does
 * otherwise. Read from the turn machine's context as it enters buildPrompt, where the
 * prompt is the one sent.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage, HistoryMode, PromptTokens } from '../events.js';

export type SentRecord =
  | {
      k: 'system';
      ts: number;
      hash: string;
      content: string;
      detailIndexTokens: number | null;
      /** With the memory after the history: the memory block that opens the last message. */
      memory?: string;
    }
  | { k: 'message'; ts: number; seq: number; turn: number; tokens: number; message: ChatMessage; pinned?: true }
  | {
      k: 'request';
      ts: number;
      turn: number;
      request: number;
      mode: HistoryMode;
      system: string;
      /** The history sent, as runs [first seq, count] in order. */
      seqs: [number, number][];
      /** Appended to the last history message: `<context_meta>` and the reminder when due. */
      tail: string;
      tokens: PromptTokens;
      /** Tokens kept free for the answer (reserveOutputTokens). */
      reserved: number | null;
    };

/** The parts of the turn machine's context read here (kept loose: a trace must never break a turn). */
interface TurnView {
  turn?: unknown;
  request?: unknown;
  mode?: unknown;
  prompt?: { messages?: ChatMessage[]; range?: [number, number]; pinned?: number[]; tokens?: PromptTokens } | null;
  history?: { items?: readonly { seq: number; turn: number; tokens: number; message: ChatMessage; pinned?: true }[]; length?: number };
  base?: { memoryHead?: unknown } | null;
  statics?: { counter?: { text?(text: string): number }; settings?: { reserveOutputTokens?: unknown } };
}

const INDEX_OPEN = '<detail_index>';

export class SentMessages {
  /** The message each seq was traced with: a compaction that stubs a tool output makes a new one. */
  private readonly seen = new Map<number, ChatMessage>();
  private readonly systems = new Set<string>();
  private lastSystem: string | null = null;
  private lastHash = '';
  private last: { items: readonly unknown[]; from: number; to: number; seqs: [number, number][] } | null = null;

  /** The records a request adds to the trace: the bodies not traced yet, then the request. */
  records(context: unknown, ts: number): SentRecord[] {
    const c = context as TurnView | undefined;
    const prompt = c?.prompt;
    const items = c?.history?.items;
    if (!prompt?.messages || !prompt.range || !prompt.tokens || !items || typeof c.turn !== 'number' || typeof c.request !== 'number')
      return [];
    const out: SentRecord[] = [];
    const system = prompt.messages[0];
    const content = system?.role === 'system' ? system.content : '';
    const head = typeof c.base?.memoryHead === 'string' ? c.base.memoryHead : null;
    const key = head === null ? content : `${content}\u0000${head}`;
    // The system message (and the memory after the history) is rebuilt only when the memory changes: hash it only then.
    if (key !== this.lastSystem) {
      this.lastSystem = key;
      this.lastHash = createHash('sha256').update(key).digest('base64url').slice(0, 16);
    }
    const hash = this.lastHash;
    if (!this.systems.has(hash)) {
      this.systems.add(hash);
      const notebook = head ?? content;
      const index = notebook.indexOf(INDEX_OPEN);
      const counter = c.statics?.counter;
      const detailIndexTokens = index >= 0 && typeof counter?.text === 'function' ? counter.text(notebook.slice(index).trimEnd()) : null;
      out.push({ k: 'system', ts, hash, content, detailIndexTokens, ...(head === null ? {} : { memory: head }) });
    }
    const [from, to] = prompt.range;
    // The history grows at its tip within one view: what the last request carried from the
    // same view and start is carried again, and only the items after it are looked at.
    const last = this.last;
    const reuse = last !== null && last.items === items && last.from === from && last.to <= to;
    const seqs: [number, number][] = reuse ? last.seqs.map(([seq, n]) => [seq, n]) : [];
    const add = (i: number): boolean => {
      const item = items[i];
      if (!item) return false;
      if (this.seen.get(item.seq) !== item.message) {
        this.seen.set(item.seq, item.message);
        const pinned = item.pinned ? { pinned: true as const } : {};
        out.push({ k: 'message', ts, seq: item.seq, turn: item.turn, tokens: item.tokens, message: item.message, ...pinned });
      }
      const run = seqs.at(-1);
      if (run && run[0] + run[1] === item.seq) run[1]++;
      else seqs.push([item.seq, 1]);
      return true;
    };
    // The same view and start: the same pinned messages before it, already in the runs.
    if (!reuse) for (const i of prompt.pinned ?? []) if (i < from && !add(i)) return [];
    for (let i = reuse ? last.to : from; i < to; i++) if (!add(i)) return [];
    this.last = { items, from, to, seqs: seqs.map(([seq, n]) => [seq, n]) };
    this.forgetArchived(items, typeof c.history?.length === 'number' ? c.history.length : items.length);
    const lastText = (head ?? '') + (items[to - 1]!.message.content ?? '');
    const sentLast = prompt.messages.at(-1)?.content ?? '';
    const tail = sentLast.startsWith(lastText) ? sentLast.slice(lastText.length) : '';
    out.push({
      k: 'request',
      ts,
      turn: c.turn,
      request: c.request,
      mode: c.mode as HistoryMode,
      system: hash,
      seqs,
      tail,
      tokens: prompt.tokens,
      reserved: typeof c.statics?.settings?.reserveOutputTokens === 'number' ? c.statics.settings.reserveOutputTokens : null,
    });
    return out;
  }

  /**
   * What was traced of messages a compaction took out of the history: never sent again, so
   * never compared again. Kept, it held every message of a long session (a 10,000-turn soak
   * grew by ~25 KB a turn, the memory writes' arguments); dropped once it is twice the history.
   */
  private forgetArchived(items: readonly { seq: number }[], length: number): void {
    if (this.seen.size <= 2 * length + 64) return;
    const present = new Set<number>();
    for (let i = 0; i < length; i++) present.add(items[i]!.seq);
    for (const seq of this.seen.keys()) if (!present.has(seq)) this.seen.delete(seq);
  }
}
