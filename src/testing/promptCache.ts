/**
 * The test server's prompt cache: per request, how many of its leading tokens a provider
 * would have read from its cache, and written to it, given the earlier requests of the same
 * session. The two price models providers use:
 * - `automatic` is OpenAI's: the longest prefix shared with any earlier request, from
 *   `minTokens` (1,024) on, in increments of `granularity` (128) tokens; writing costs
 *   nothing more, so none is reported.
 * - `explicit` is Anthropic's: entries are written at the request's breakpoints
 *   (`cache_control` on a message or a content part; at most 4, more are refused as
 *   Anthropic refuses them), a breakpoint reads the longest entry that ends at it or at one
 *   of the 20 message boundaries before it, and what a request writes is the part before its
 *   last new breakpoint that it did not read (billed at 1.25 × input for the 5-minute
 *   cache); a breakpoint under `minTokens` writes nothing, silently, as Anthropic's do.
 * Entries never expire here (a run is minutes; Anthropic's live 5 minutes from their last
 * use). Counts are ours (gpt-tokenizer), like the usage.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../history/messages.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { ChatRequest } from './wire.js';

export type PromptCaching = 'automatic' | 'explicit' | 'off';

export interface PromptCacheOptions {
  mode: PromptCaching;
  /** Automatic caching counts in increments of this many tokens (default 128, OpenAI's). */
  granularity?: number;
  /** Shorter prefixes are never cached (default 1024, OpenAI's and Anthropic's minimum). */
  minTokens?: number;
}

/** Anthropic looks this many blocks back from a breakpoint for an earlier entry. */
const LOOKBACK = 20;
/** Anthropic takes at most this many cache_control breakpoints in one request. */
export const MAX_BREAKPOINTS = 4;

/** One request's prompt tokens as the cache served them. */
export interface CacheUse {
  /** Read from the cache. */
  read: number;
  /** Written to it (explicit caching only). */
  written: number;
}

export class PromptCache {
  /** Automatic: every prefix seen (by hash), with the message that followed it last. */
  private readonly prefixes = new Map<string, unknown>();
  /** Explicit: the prefixes written at breakpoints. */
  private readonly entries = new Set<string>();
  private readonly messageTokens = new Map<string, number>();
  private readonly granularity: number;
  private readonly minTokens: number;

  constructor(
    private readonly counter: TokenCounter,
    private readonly options: PromptCacheOptions,
  ) {
    this.granularity = Math.max(1, options.granularity ?? 128);
    this.minTokens = Math.max(0, options.minTokens ?? 1024);
  }

  get enabled(): boolean {
    return this.options.mode !== 'off';
  }

  /** Why a provider would refuse this request's breakpoints (more than 4), or null. */
  refusal(body: ChatRequest): string | null {
    if (this.options.mode !== 'explicit') return null;
    const found = body.messages.reduce((n, m) => n + marks(m), 0);
    return found > MAX_BREAKPOINTS ? `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${found}.` : null;
  }

  /** The cached tokens of this request (of `promptTokens` in all); the request is then remembered. */
  lookup(body: ChatRequest, session: string, promptTokens: number): number {
    return this.use(body, session, promptTokens).read;
  }

  /** The tokens of this request read from the cache and written to it (of `promptTokens` in all); the request is then remembered. */
  use(body: ChatRequest, session: string, promptTokens: number): CacheUse {
    if (this.options.mode === 'off') return { read: 0, written: 0 };
    const seed = hash(`${session}\u0000${JSON.stringify(body.tools ?? [])}`);
    if (this.options.mode === 'explicit') {
      // Anthropic caches by content block: a message sent in parts is as many blocks.
      const blocks = body.messages.flatMap((m) => this.blocksOf(m));
      const ends = [Math.max(0, promptTokens - blocks.reduce((a, b) => a + b.tokens, 0))];
      for (const b of blocks) ends.push(ends.at(-1)! + b.tokens);
      const hashes = [seed];
      for (const b of blocks) hashes.push(hash(`${hashes.at(-1)!}\u0000${b.key}`));
      const { read, written } = this.explicit(
        blocks.map((b) => b.marked),
        hashes,
        ends,
      );
      const cappedRead = Math.min(read, promptTokens);
      return { read: cappedRead, written: Math.max(0, Math.min(written, promptTokens - cappedRead)) };
    }
    const messages = body.messages.map(plain);
    // Message i ends at ends[i + 1]; ends[0] is the tools (and framing), which come first.
    const sizes = messages.map((m) => this.tokensOf(m));
    const ends = [Math.max(0, promptTokens - sizes.reduce((a, b) => a + b, 0))];
    for (const size of sizes) ends.push(ends.at(-1)! + size);
    const hashes = [seed];
    for (const m of messages) hashes.push(hash(`${hashes.at(-1)!}\u0000${JSON.stringify(m)}`));
    return { read: Math.min(this.automatic(messages, hashes, ends), promptTokens), written: 0 };
  }

  /**
   * A message's content blocks: one for text sent whole (with its calls), one per part for
   * text sent in parts (the calls with the last). A block's key is what it holds, so the text
   * of a message sent whole is the same block as that text sent as the first of two parts.
   */
  private blocksOf(message: ChatMessage): { key: string; tokens: number; marked: boolean }[] {
    const m = message as ChatMessage & { cache_control?: unknown; content: unknown };
    const whole = plain(message);
    const { content, ...rest } = whole as ChatMessage & { content: unknown };
    if (!Array.isArray(m.content))
      return [{ key: JSON.stringify({ ...rest, content }), tokens: this.tokensOf(whole), marked: marks(message) > 0 }];
    const framing = this.tokensOf({ ...rest, content: '' } as ChatMessage);
    const parts = m.content as { text?: unknown; cache_control?: unknown }[];
    return parts.map((p, i) => {
      const text = typeof p?.text === 'string' ? p.text : '';
      return {
        key: JSON.stringify(i === 0 ? { ...rest, content: text } : { content: text }),
        tokens: (i === 0 ? framing : 0) + this.counter.text(text),
        marked: !!p?.cache_control || (i === parts.length - 1 && !!m.cache_control),
      };
    });
  }

  private automatic(messages: ChatMessage[], hashes: string[], ends: number[]): number {
    let shared = 0;
    for (let i = hashes.length - 1; i >= 0; i--) {
      if (!this.prefixes.has(hashes[i]!)) continue;
      shared = ends[i]!;
      // Within the first message that differs, the characters it shares with the one that followed before.
      const before = this.prefixes.get(hashes[i]!) as ChatMessage | undefined;
      const now = messages[i];
      if (before && now && before.role === now.role) shared += this.counter.text(commonPrefix(before.content ?? '', now.content ?? ''));
      break;
    }
    hashes.forEach((h, i) => this.prefixes.set(h, messages[i]));
    if (shared < this.minTokens) return 0;
    return Math.floor(shared / this.granularity) * this.granularity;
  }

  private explicit(marked: readonly boolean[], hashes: string[], ends: number[]): CacheUse {
    const breakpoints = marked.flatMap((m, i) => (m ? [i + 1] : []));
    let read = 0;
    for (const b of breakpoints) {
      for (let j = b; j >= Math.max(0, b - LOOKBACK); j--) {
        if (this.entries.has(hashes[j]!)) {
          read = Math.max(read, ends[j]!);
          break;
        }
      }
    }
    // Each new entry is written; the request pays for what it did not read, up to the last one.
    let writtenTo = 0;
    for (const b of breakpoints) {
      if (ends[b]! < this.minTokens || this.entries.has(hashes[b]!)) continue;
      this.entries.add(hashes[b]!);
      writtenTo = Math.max(writtenTo, ends[b]!);
    }
    return { read, written: Math.max(0, writtenTo - read) };
  }

  private tokensOf(message: ChatMessage): number {
    const key = JSON.stringify(message);
    let n = this.messageTokens.get(key);
    if (n === undefined) {
      n = this.counter.message(message);
      this.messageTokens.set(key, n);
    }
    return n;
  }
}

/** A message as the cache (and the server's count) sees it: its text and calls, without the breakpoint marks. */
export function plain(message: ChatMessage): ChatMessage {
  const { cache_control: _mark, ...rest } = message as ChatMessage & { cache_control?: unknown };
  const content = (rest as { content: unknown }).content;
  if (Array.isArray(content)) {
    const text = content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
    return { ...rest, content: text } as ChatMessage;
  }
  if (rest.role === 'assistant' && rest.tool_calls) {
    return {
      ...rest,
      tool_calls: rest.tool_calls.map(
        ({ cache_control: _m, ...call }: (typeof rest.tool_calls)[number] & { cache_control?: unknown }) => call,
      ),
    };
  }
  return rest as ChatMessage;
}

/** The breakpoints a message carries: on itself, on its content parts, on its tool calls. */
function marks(message: ChatMessage): number {
  const m = message as { cache_control?: unknown; content?: unknown; tool_calls?: { cache_control?: unknown }[] };
  let n = m.cache_control ? 1 : 0;
  if (Array.isArray(m.content)) n += m.content.filter((p: { cache_control?: unknown }) => p?.cache_control).length;
  return n + (m.tool_calls?.filter((c) => c.cache_control).length ?? 0);
}

function commonPrefix(a: string, b: string): string {
  let i = 0;
  const n = Math.min(a.length, b.length);
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return a.slice(0, i);
}

function hash(text: string): string {
  return createHash('sha1').update(text).digest('base64');
}
