/**
 * A protocol the test server speaks (Chat Completions, the Responses API, Anthropic's
 * Messages API): how it reads a request into the Chat Completions body its policies read,
 * and how it answers — its JSON, its SSE events, its errors — as the provider does. What
 * the server does with a request (faults, the policy, the prompt cache, the usage) is the
 * same for every protocol (testServer.ts).
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Fault } from './faults.js';
import type { Completion } from './sseStream.js';
import type { ChatRequest } from './wire.js';

/** The protocol a request spoke: Chat Completions, the Responses API, Anthropic's Messages API. */
export type ProtocolName = 'chat' | 'responses' | 'messages';

/** A request as the policy and the prompt cache read it. */
export interface ReadRequest {
  request: ChatRequest;
  stream: boolean;
  /** The output limit the client asked for (0: none). */
  maxTokens: number;
  /** The prompt cache's session when the body names one (OpenAI's prompt_cache_key). */
  cacheKey?: string;
  /** The request as the prompt cache reads it, when its breakpoints part what the model reads as one (Anthropic's system blocks). */
  cacheView?: ChatRequest;
}

/** Why a real server would refuse the body (400), naming the field. */
export interface Refusal {
  problem: string;
  param?: string;
}

/** The errors the server answers, each in the protocol's words. */
export type ErrorKind = 'auth' | 'invalid' | 'too_large' | 'not_found' | 'rate_limit' | 'server' | 'overflow';

/** The token counts of an answer, as the server reports them (scaled). */
export interface TestUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of promptTokens, read from the prompt cache; null when caching is off (nothing is said). */
  cachedTokens: number | null;
  /** Of promptTokens, written to the prompt cache (explicit caching). */
  writtenTokens: number;
  /** Reported with every detail the protocol counts (TestServerOptions.usageDetails). */
  details: boolean;
}

export interface AnswerOptions {
  model: string;
  chunkChars: number;
  chunkDelayMs: number;
  /** null: the server reports no usage. */
  usage: TestUsage | null;
}

export interface TestProtocol {
  readonly name: ProtocolName;
  /** Its route: POST to this path. */
  readonly path: string;
  /** Whether the request carries the server's key, as the protocol sends one. */
  authorized(headers: IncomingHttpHeaders, apiKey: string): boolean;
  read(body: unknown, strict: boolean): ReadRequest | Refusal;
  /** An error in the protocol's shape; `message` replaces the kind's own words; `param` names the field, where the protocol says one. */
  error(res: ServerResponse, status: number, kind: ErrorKind, message?: string, param?: string): void;
  /** The usage as the protocol reports it. */
  usage(usage: TestUsage): Record<string, unknown>;
  /** The overflow's words: the prompt and the window, as the provider says them. */
  overflow(promptTokens: number, window: number): string;
  /** The answer: one JSON body, or the protocol's SSE events with the faults asked for. */
  answer(
    res: ServerResponse,
    completion: Completion,
    read: ReadRequest,
    raw: unknown,
    faults: Fault[],
    options: AnswerOptions,
  ): Promise<void>;
}
