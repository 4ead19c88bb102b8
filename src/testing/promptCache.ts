/**
 * The test server's prompt cache: per request, how many of its leading tokens a provider
 * would have read from its cache, given the earlier requests of the same session.
 * `automatic` is OpenAI's kind: the longest prefix shared with any earlier request, from
 * `minTokens` (1,024) on, in increments of `granularity` (128) tokens, as OpenAI documents. `explicit` is Anthropic's:
 * entries are written at the request's breakpoints (`cache_control` on a message or a
 * content part), and a breakpoint reads the longest entry that ends at it or at one of
 * the 20 message boundaries before it. Counts are ours (gpt-tokenizer), like the usage.
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

  /** The cached tokens of this request (of `promptTokens` in all); the request is then remembered. */
  lookup(body: ChatRequest, session: string, promptTokens: number): number {
    return this.read(body, session, promptTokens).cached;
  }

  /**
   * The tokens of this request read from the cache and those written to it (explicit caching
   * writes the prefix up to each breakpoint not cached yet, as Anthropic's
   * cache_creation_input_tokens counts it); the request is then remembered.
   */
  read(body: ChatRequest, session: string, promptTokens: number): { cached: number; written: number } {
    if (this.options.mode === 'off') return { cached: 0, written: 0 };
    const messages = body.messages.map(plain);
    // Message i ends at ends[i + 1]; ends[0] is the tools (and framing), which come first.
    const sizes = messages.map((m) => this.tokensOf(m));
    const ends = [Math.max(0, promptTokens - sizes.reduce((a, b) => a + b, 0))];
    for (const size of sizes) ends.push(ends.at(-1)! + size);
    const hashes = [hash(`${session}\u0000${JSON.stringify(body.tools ?? [])}`)];
    for (const m of messages) hashes.push(hash(`${hashes.at(-1)!}\u0000${JSON.stringify(m)}`));
    if (this.options.mode === 'automatic') return { cached: Math.min(this.automatic(messages, hashes, ends), promptTokens), written: 0 };
    const { cached, written } = this.explicit(body.messages, hashes, ends);
    return { cached: Math.min(cached, promptTokens), written: Math.min(written, promptTokens - Math.min(cached, promptTokens)) };
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

  private explicit(raw: readonly ChatMessage[], hashes: string[], ends: number[]): { cached: number; written: number } {
    const breakpoints = raw.flatMap((m, i) => (marked(m) ? [i + 1] : []));
    let cached = 0;
    let end = 0;
    for (const b of breakpoints) {
      for (let j = b; j >= Math.max(0, b - LOOKBACK); j--) {
        if (this.entries.has(hashes[j]!)) {
          cached = Math.max(cached, ends[j]!);
          break;
        }
      }
    }
    for (const b of breakpoints)
      if (ends[b]! >= this.minTokens && !this.entries.has(hashes[b]!)) {
        this.entries.add(hashes[b]!);
        end = Math.max(end, ends[b]!);
      }
    return { cached, written: Math.max(0, end - cached) };
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

/** A message as the cache sees it: its text and calls, without the breakpoint marks. */
function plain(message: ChatMessage): ChatMessage {
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

function marked(message: ChatMessage): boolean {
  const m = message as { cache_control?: unknown; content?: unknown; tool_calls?: { cache_control?: unknown }[] };
  if (m.cache_control) return true;
  if (Array.isArray(m.content) && m.content.some((p: { cache_control?: unknown }) => p?.cache_control)) return true;
  return !!m.tool_calls?.some((c) => c.cache_control);
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
