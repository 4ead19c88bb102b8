/**
 * The `llm` over any Vercel AI SDK language model (Anthropic, Google, Bedrock, Mistral,
 * Ollama, OpenAI-compatible servers, …): one doStream per request, assembling text and
 * tool-call deltas, usage with cached input tokens, the caller's abort and a stall
 * watchdog, and every failure as an LLMError the turn machine acts on. The model is
 * called directly (LanguageModelV3), so the AI SDK neither retries nor runs tools: the
 * turn machine does both, as with openaiChat.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import type { LLM, LLMCallOptions, LLMRequest, LLMResponse } from '../llm/llm.js';
import { modelLimits } from '../llm/models.js';
import { redactor } from '../secrets/redact.js';
import { Watchdog } from '../llm/streamWatchdog.js';
import { firstByteAllowance, msPerPromptTokenForProvider, type FirstByteOptions } from '../llm/firstByteAllowance.js';
import { outputLimitChars, outputOverrun } from '../llm/outputLimit.js';
import { cachingOf } from '../llm/providerCaching.js';
import type { ProviderCaching, RetryPolicy } from '../settings/settings.js';
import { ConfigError } from '../settings/config.js';
import { promptOf, toolsOf, type MadePrompt } from './aiSdkPrompt.js';
import { ConversionsByPlace } from '../llm/conversionsByPlace.js';
import { classifyAiSdk } from './aiSdkErrors.js';
import { PartAssembler } from './partAssembler.js';

export interface AiSdkModelOptions {
  /** Default: from the known-models table by the model's id, else 32768. */
  contextWindow?: number;
  /** Tokens reserved for the answer; default min(the table's, window / 4). */
  maxOutputTokens?: number;
  /** Retries of a failed request by the turn machine; default its policy's. */
  maxRetries?: number;
  /** The longest time without output inside a stream (parts that add nothing do not count). Default 120 s. */
  timeoutMs?: number;
  /**
   * The wait for a response's first output before the prompt's share (below). Default: timeoutMs.
   * A model on a CPU reads the whole prompt before it sends anything.
   */
  firstByteTimeoutMs?: number;
  /**
   * Added to the first output's wait per token of the prompt. Default 1 ms for a hosted provider
   * (OpenAI, Anthropic, Google, Bedrock, Mistral, …), else 50 ms: Ollama or an OpenAI-compatible
   * server may run on a CPU (a 3B model on two cores reads ~34 prompt tokens/s).
   */
  firstByteMsPerPromptToken?: number;
  /** A separate (often cheaper) model for compaction summaries, called the same way. */
  compactionModel?: LanguageModelV3;
  /**
   * 'explicit' marks cache breakpoints (Anthropic cache_control, Bedrock cachePoint,
   * cache_control for OpenAI-compatible gateways) after the system prompt, the working
   * memory and the history prefix; 'automatic' sends none (OpenAI-style prefix caching).
   * Default: explicit for Anthropic and Bedrock models, else automatic.
   */
  caching?: ProviderCaching;
  temperature?: number;
  headers?: Record<string, string>;
  /** Passed to every call (e.g. `{ anthropic: { thinking: … } }`). */
  providerOptions?: LanguageModelV3CallOptions['providerOptions'];
  /** Values never to be written or reported (an API key you passed to the provider). */
  secrets?: readonly string[];
}

export interface AiSdkModel extends LLM {
  readonly provider: string;
  readonly compactionModel: string;
  readonly caching: ProviderCaching;
}

const DEFAULT_TIMEOUT_MS = 120_000;

export function aiSdkModel(model: LanguageModelV3, options: AiSdkModelOptions = {}): AiSdkModel {
  checkModel(model, 'model');
  if (options.compactionModel !== undefined) checkModel(options.compactionModel, 'compactionModel');
  const limits = modelLimits(model.modelId);
  const contextWindow = options.contextWindow ?? limits.contextWindow;
  const maxOutputTokens = options.maxOutputTokens ?? Math.min(limits.maxOutputTokens, Math.floor(contextWindow / 4));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const firstByte: FirstByteOptions = {
    baseMs: options.firstByteTimeoutMs ?? timeoutMs,
    msPerPromptToken: options.firstByteMsPerPromptToken ?? msPerPromptTokenForProvider(model.provider),
  };
  const secrets = [...(options.secrets ?? [])];
  const hide = redactor(secrets);
  const caching = options.caching ?? cachingOf(model.provider);
  const retry: Partial<RetryPolicy> = options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries };

  const made: MadePrompt = new ConversionsByPlace();
  const callOptions = (request: LLMRequest, signal: AbortSignal): LanguageModelV3CallOptions => ({
    prompt: promptOf(request, caching === 'explicit', made),
    maxOutputTokens: request.maxOutputTokens,
    ...(request.tools.length ? { tools: toolsOf(request.tools) } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.providerOptions ? { providerOptions: options.providerOptions } : {}),
    abortSignal: signal,
  });

  const run = async (
    use: LanguageModelV3,
    request: LLMRequest,
    signal: AbortSignal,
    onText: (delta: string) => void,
  ): Promise<LLMResponse> => {
    const watchdog = new Watchdog(timeoutMs, signal, firstByteAllowance(firstByte, request));
    const assembled = new PartAssembler();
    try {
      watchdog.start();
      const { stream } = await untilAborted(use.doStream(callOptions(request, watchdog.signal)), watchdog.signal);
      const reader = stream.getReader();
      const limit = outputLimitChars(request.maxOutputTokens);
      // A provider's stream ends when its fetch is aborted; a stream that ignores the signal is cancelled.
      const cancel = (): void => void reader.cancel().catch(() => {});
      watchdog.signal.addEventListener('abort', cancel, { once: true });
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (value.type === 'error') throw new StreamError(value.error);
          const { text, progress } = assembled.add(value);
          if (progress) watchdog.progress();
          if (assembled.outputChars > limit) {
            watchdog.cut();
            throw outputOverrun(limit, request.maxOutputTokens);
          }
          if (text) onText(text);
          // The finish is the end: nothing past it is read.
          if (assembled.finished) {
            cancel();
            break;
          }
        }
      } finally {
        watchdog.signal.removeEventListener('abort', cancel);
        reader.releaseLock();
      }
      if (!assembled.finished || watchdog.userAborted) watchdog.check();
      return assembled.finish();
    } catch (error) {
      throw classifyAiSdk(error instanceof StreamError ? error.value : error, watchdog, hide);
    } finally {
      watchdog.stop();
    }
  };

  return {
    model: model.modelId,
    provider: model.provider,
    contextWindow,
    maxOutputTokens,
    compactionModel: (options.compactionModel ?? model).modelId,
    caching,
    retry,
    secrets,
    complete: (request: LLMRequest, call: LLMCallOptions) => run(model, request, call.signal, call.onText),
    summarize: (request: LLMRequest, call: { signal: AbortSignal }) =>
      run(options.compactionModel ?? model, request, call.signal, () => {}),
  };
}

function checkModel(model: unknown, what: string): void {
  const m = model as Partial<LanguageModelV3> | null;
  if (typeof model === 'string')
    throw new ConfigError(
      `aiSdkModel: ${what} must be a provider's model object (e.g. anthropic('claude-sonnet-4-5')), not the string ${JSON.stringify(model)}`,
    );
  if (!m || typeof m !== 'object' || typeof m.doStream !== 'function')
    throw new ConfigError(`aiSdkModel: ${what} is not an AI SDK language model (it has no doStream)`);
  if (m.specificationVersion !== 'v3')
    throw new ConfigError(
      `aiSdkModel: ${what} implements the AI SDK's language model specification ${String(m.specificationVersion)}; workmem needs v3 (ai 6 and its providers)`,
    );
}

/** An error part of the stream, carried out of the loop to be classified. */
class StreamError extends Error {
  constructor(readonly value: unknown) {
    super('stream error');
  }
}

/** `work`, or the signal's abort if that comes first (a provider that ignores the signal must not hold the request). */
function untilAborted<T extends { stream: ReadableStream<unknown> }>(work: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        // Too late: nobody reads this stream.
        if (signal.aborted) void result.stream.cancel().catch(() => {});
        else resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
