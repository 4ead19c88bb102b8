/**
 * What workmem needs from a language model: one streaming completion per request.
 * The OpenAI client, the in-process scripted model and any host's own adapter
 * implement this; the turn machine owns retries, compaction and everything else.
 */
import type { LLMErrorKind, TurnError } from '../events.js';
import type { AssistantMessage, ChatMessage } from '../history/messages.js';
import type { ProviderCaching, RetryPolicy } from '../settings/settings.js';
import type { ToolSpec } from '../tools/tool.js';

/** One request to the model: the messages, the tools and the output limit (and where its stable parts end). */
export interface LLMRequest {
  messages: ChatMessage[];
  tools: readonly ToolSpec[];
  maxOutputTokens: number;
  /**
   * Where the stable parts of the request end, for a provider with explicit prompt caching
   * (Anthropic's cache_control allows 4): after the system prompt, after the working
   * memory, after the history prefix. Automatic prefix caching (OpenAI's) needs none.
   */
  cacheBreakpoints?: readonly CacheBreakpoint[];
  /** Our count of the prompt's tokens, which the wait for the first output follows (estimated when absent). */
  promptTokens?: number;
}

/** The end of a stable part: message `message`, or only its first `chars` characters. */
export interface CacheBreakpoint {
  message: number;
  chars?: number;
}

import type { TokenUsage } from '../events.js';
export type { TokenUsage };

/** The token counts a server reported for one request. */
export interface LLMUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of promptTokens, those read from the provider's prompt cache (when it says). */
  cachedPromptTokens?: number;
  /** Of promptTokens, those written to the provider's prompt cache (Anthropic's cache_creation_input_tokens, when it says). */
  cacheWriteTokens?: number;
}

/** The model's answer to one request: the assistant message, the server's token counts, the finish reason. */
export interface LLMResponse {
  message: AssistantMessage;
  /** null when the server did not report usage; we count instead. */
  usage: LLMUsage | null;
  finishReason: string;
}

/** How one request is called: its abort signal and where streamed text goes. */
export interface LLMCallOptions {
  signal: AbortSignal;
  /** Streamed text as it arrives. */
  onText(delta: string): void;
}

/** How a summary request is called: its abort signal, and whether the session prepares it in the background. */
export interface SummarizeOptions {
  signal: AbortSignal;
  background?: boolean;
}

/** A language model as workmem calls it: one streaming completion per request (openaiChat, aiSdkModel or your own). */
export interface LLM {
  readonly model: string;
  readonly contextWindow: number;
  /** Tokens reserved for the answer: a request never exceeds window − this. */
  readonly maxOutputTokens: number;
  complete(request: LLMRequest, options: LLMCallOptions): Promise<LLMResponse>;
  /**
   * A one-shot, non-streaming completion for summaries (may use a cheaper model). `background`:
   * asked while the session goes on (docs/memory.md#background-summaries), not waited for by a turn.
   */
  summarize?(request: LLMRequest, options: SummarizeOptions): Promise<LLMResponse>;
  /** The retry policy this model wants by default; session settings override it. */
  readonly retry?: Partial<RetryPolicy>;
  /** Values never to be written or reported (its API key): the session redacts them. */
  readonly secrets?: readonly string[];
  /** How the provider behind it caches prompts (default 'automatic'): 'explicit' where it honours the request's cacheBreakpoints. */
  readonly caching?: ProviderCaching;
}

export type { LLMErrorKind, TurnError };

// The error vocabulary the clients throw and the turn machine reads (pure: src/errors/llmError.ts).
export { LLMError, FailedRequest } from '../errors/llmError.js';
