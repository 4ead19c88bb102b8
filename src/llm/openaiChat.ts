/**
 * The `llm` for any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama, LM
 * Studio, …) on the official SDK: Chat Completions with `stream: true` and usage in the
 * last chunk. It assembles text and tool-call deltas, watches for a stalled stream, and
 * turns every failure into an LLMError whose kind the turn machine acts on (retry,
 * compact-and-retry on overflow, or fail). The SDK's own retries are off: the machine
 * retries, visibly, with the policy given here.
 */
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ConfigError } from '../settings/config.js';
import { outputLimitChars, outputOverrun } from './outputLimit.js';
import type { LLM, LLMCallOptions, LLMRequest, LLMResponse } from './llm.js';
import { modelLimits } from './models.js';
import { redact, redactor } from '../secrets/redact.js';
import { userinfoSecrets, withoutUserinfo } from './baseUrl.js';
import { classify } from './openaiErrors.js';
import { Assembler, usageOf } from './streamAssembler.js';
import { Watchdog } from './streamWatchdog.js';
import { firstByteAllowance, msPerPromptTokenFor, type FirstByteOptions } from './firstByteAllowance.js';
import { withBoundCallIds } from './toolCallIds.js';
import { withCacheControl } from './cacheControl.js';
import type { RetryPolicy } from '../settings/settings.js';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** Options of openaiChat; defaults from OPENAI_BASE_URL, OPENAI_API_KEY and WORKMEM_MODEL. */
export interface OpenAIChatOptions {
  /** Default: $WORKMEM_MODEL, else gpt-4o-mini. */
  model?: string;
  /** Default: $OPENAI_BASE_URL, else OpenAI's. */
  baseURL?: string;
  /** Default: $OPENAI_API_KEY. Required for OpenAI's own endpoint only. */
  apiKey?: string;
  /** Default: from the known-models table, else 32768. */
  contextWindow?: number;
  /** Tokens reserved for the answer; default min(4096, window / 4). */
  maxOutputTokens?: number;
  /** Retries of a failed request (429, 5xx, 408/409, connection errors); default 4. */
  maxRetries?: number;
  /**
   * The longest silence once an answer's output flows, whatever the server sends meanwhile:
   * keep-alive chunks, empty deltas and `: ping` comments are not output. Before the first
   * output (the response's headers may come at once) the wait is firstByteTimeoutMs plus
   * firstByteMsPerPromptToken per prompt token, also counting no keep-alive. Default 120 s.
   */
  timeoutMs?: number;
  /**
   * The wait for a response's first output before the prompt's share (below). Default: timeoutMs.
   * A model on a CPU reads the whole prompt before it sends anything.
   */
  firstByteTimeoutMs?: number;
  /**
   * Added to the first output's wait per token of the prompt. Default 50 ms for a server on a
   * loopback or private address (it may be a CPU: a 3B model on two cores reads ~34 tokens/s), else 1 ms.
   */
  firstByteMsPerPromptToken?: number;
  /** A separate (often cheaper) model for compaction summaries. */
  compactionModel?: string;
  temperature?: number;
  headers?: Record<string, string>;
  env?: NodeJS.ProcessEnv;
  /**
   * Send the request's cache breakpoints as `cache_control` marks (cacheControl.ts), for an
   * endpoint in front of a provider with explicit prompt caching (OpenRouter or LiteLLM to
   * Anthropic; the test server's `promptCaching: 'explicit'`). Default false: OpenAI and most
   * servers cache by prefix on their own.
   */
  cacheControl?: boolean;
}

export interface OpenAIChat extends LLM {
  /** The API it speaks, as OpenTelemetry's `gen_ai.provider.name` names it. */
  readonly provider: 'openai';
  readonly baseURL: string;
  readonly compactionModel: string;
}

const DEFAULT_TIMEOUT_MS = 120_000;

/** The model over any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp, Ollama, …). */
export function openaiChat(options: OpenAIChatOptions = {}): OpenAIChat {
  const env = options.env ?? process.env;
  const model = options.model ?? env.WORKMEM_MODEL?.trim() ?? 'gpt-4o-mini';
  const baseURL = (options.baseURL ?? env.OPENAI_BASE_URL?.trim()) || OPENAI_BASE_URL;
  const isOpenAI = /^https:\/\/api\.openai\.com\b/.test(baseURL);
  const apiKey = options.apiKey ?? env.OPENAI_API_KEY?.trim();
  if (!apiKey && isOpenAI) {
    throw new ConfigError(
      'no API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to a local OpenAI-compatible server (vLLM, llama.cpp, Ollama, …)',
    );
  }
  let parsedURL: URL;
  try {
    parsedURL = new URL(baseURL);
  } catch {
    // Unparsed, it may still carry user:password@: never shown.
    throw new ConfigError(`OPENAI_BASE_URL ${JSON.stringify(baseURL.replace(/[^\s/@"]+@/g, '***@'))} is not a URL`);
  }
  // A typo such as htp:/host is bad configuration, told at once: no retry could reach it.
  if ((parsedURL.protocol !== 'http:' && parsedURL.protocol !== 'https:') || !parsedURL.hostname)
    throw new ConfigError(`OPENAI_BASE_URL ${JSON.stringify(withoutUserinfo(baseURL))} is not an http:// or https:// URL with a host`);
  const limits = modelLimits(model);
  const contextWindow = options.contextWindow ?? limits.contextWindow;
  const maxOutputTokens = options.maxOutputTokens ?? Math.min(limits.maxOutputTokens, Math.floor(contextWindow / 4));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const firstByte: FirstByteOptions = {
    baseMs: options.firstByteTimeoutMs ?? timeoutMs,
    msPerPromptToken: options.firstByteMsPerPromptToken ?? msPerPromptTokenFor(baseURL),
  };
  // A password in the URL (http://user:secret@host/v1) is a secret like the key.
  const secrets = [...(apiKey ? [apiKey] : []), ...userinfoSecrets(baseURL)];
  const hide = redactor(secrets);
  const client = new OpenAI({
    baseURL,
    apiKey: apiKey || 'no-key-needed',
    maxRetries: 0,
    timeout: timeoutMs,
    logLevel: 'off',
    ...(options.headers ? { defaultHeaders: options.headers } : {}),
  });
  // OpenAI's newer models want max_completion_tokens; most other servers know max_tokens.
  const maxParam = isOpenAI ? 'max_completion_tokens' : 'max_tokens';
  const retry: Partial<RetryPolicy> = options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries };

  const body = (request: LLMRequest, useModel: string) => ({
    model: useModel,
    messages: (options.cacheControl && request.cacheBreakpoints?.length
      ? withCacheControl(withBoundCallIds(request.messages), request.cacheBreakpoints)
      : withBoundCallIds(request.messages)) as ChatCompletionMessageParam[],
    ...(request.tools.length
      ? {
          tools: request.tools.map((t) => ({
            type: 'function' as const,
            function: { name: t.name, description: t.description, parameters: t.parameters },
          })),
        }
      : {}),
    [maxParam]: request.maxOutputTokens,
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  });

  return {
    model,
    provider: 'openai',
    caching: options.cacheControl ? 'explicit' : 'automatic',
    contextWindow,
    maxOutputTokens,
    baseURL: withoutUserinfo(baseURL),
    compactionModel: options.compactionModel ?? model,
    retry,
    secrets,

    async complete(request: LLMRequest, call: LLMCallOptions): Promise<LLMResponse> {
      const allowance = firstByteAllowance(firstByte, request);
      const watchdog = new Watchdog(timeoutMs, call.signal, allowance);
      const assembled = new Assembler();
      try {
        watchdog.start();
        const stream = await client.chat.completions.create(
          { ...body(request, model), stream: true, stream_options: { include_usage: true } } as ChatCompletionCreateParamsStreaming,
          // The SDK's own timeout (until the response headers) only backs up the watchdog's.
          { signal: watchdog.signal, timeout: backstop(allowance.ms) },
        );
        const limit = outputLimitChars(request.maxOutputTokens);
        for await (const chunk of stream) {
          const { text, progress } = assembled.add(chunk);
          // Only output holds off the watchdog: keep-alives, empty chunks and finishes do not.
          if (progress) watchdog.progress();
          if (assembled.outputChars > limit) {
            watchdog.cut();
            throw outputOverrun(limit, request.maxOutputTokens);
          }
          if (text) call.onText(text);
          if (assembled.ended) break;
        }
        if (!assembled.finished || watchdog.userAborted) watchdog.check();
        return assembled.finish();
      } catch (error) {
        // Silence after the finish costs only the usage: the answer is whole.
        if (assembled.finished && watchdog.timedOut && !watchdog.userAborted) return assembled.finish();
        throw classify(error, watchdog, hide, baseURL);
      } finally {
        watchdog.stop();
      }
    },

    async summarize(request: LLMRequest, call: { signal: AbortSignal }): Promise<LLMResponse> {
      // Not streamed: the answer comes whole, after the prompt is read and the summary written (one stall allowance).
      const allowance = firstByteAllowance({ ...firstByte, baseMs: firstByte.baseMs + timeoutMs }, request);
      const watchdog = new Watchdog(timeoutMs, call.signal, allowance);
      try {
        watchdog.start();
        const completion = await client.chat.completions.create(
          { ...body(request, options.compactionModel ?? model), stream: false } as never,
          { signal: watchdog.signal, timeout: backstop(allowance.ms) },
        );
        const choice = (completion as OpenAI.Chat.Completions.ChatCompletion).choices[0];
        const usage = (completion as OpenAI.Chat.Completions.ChatCompletion).usage;
        return {
          message: { role: 'assistant', content: choice?.message.content ?? '' },
          usage: usageOf(usage),
          finishReason: choice?.finish_reason ?? 'stop',
        };
      } catch (error) {
        throw classify(error, watchdog, hide, baseURL);
      } finally {
        watchdog.stop();
      }
    },
  };
}

/** A second past the watchdog's own limit, within what Node's timers hold. */
function backstop(ms: number): number {
  return Math.min(ms + 1_000, 2 ** 31 - 1);
}

export { redact };
