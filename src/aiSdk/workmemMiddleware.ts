/**
 * workmem inside an AI SDK agent loop (generateText, streamText, ToolLoopAgent): a language
 * model middleware and workmem's tools as AI SDK tools, over one session (HostLoop). On each
 * model call the middleware hands the session every message the loop holds and sends the
 * model the request the session builds instead (memory, history per phase, <context_meta>,
 * the fallback first); the answer, streamed or not, is recorded and given to the host as the
 * model gave it. An overflow is compacted once and the call made again. The host's loop runs
 * the tools: its own, and workmem's (memory, compact_history), which run against the session.
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Middleware,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import type { ModelMessage, ToolSet } from 'ai';
import { LLMError } from '../llm/llm.js';
import { modelLimits } from '../llm/models.js';
import { cachingOf } from '../llm/providerCaching.js';
import type { WatchdogState } from '../llm/streamWatchdog.js';
import { redactor } from '../secrets/redact.js';
import type { LLMResponse } from '../llm/llm.js';
import { AnswerToolCalls } from '../session/answerToolCalls.js';
import { HostLoop, type HostLoopOptions, type PreparedCall } from '../session/hostLoop.js';
import type { Session } from '../session/session.js';
import type { ProviderCaching } from '../settings/settings.js';
import { aiSdkModel } from './aiSdkModel.js';
import { classifyAiSdk } from './aiSdkErrors.js';
import { promptOf, type MadePrompt } from './aiSdkPrompt.js';
import { ConversionsByPlace } from '../llm/conversionsByPlace.js';
import { archivedIndices } from './archivedMessages.js';
import { conversationOf, responseOf, toolSpecsOf } from './hostPrompt.js';
import { PartAssembler } from './partAssembler.js';
import { OWN_TOOL_PREFIX } from '../tools/toolNaming.js';

type FunctionTool = LanguageModelV3FunctionTool;

export interface WorkmemOptions extends Omit<HostLoopOptions, 'model' | 'contextWindow' | 'summarize'> {
  /** The model the middleware wraps: its id names the token counter and, by default, the window. */
  model: LanguageModelV3;
  /** Default: the known window of the model's id, else 32768. */
  contextWindow?: number;
  /** A model for compaction summaries (often a cheaper one); default the wrapped model. */
  compactionModel?: LanguageModelV3;
  /** As aiSdkModel's, for `model`: explicit cache breakpoints for Anthropic and Bedrock, none otherwise; the session's refreshes weigh by it. */
  caching?: ProviderCaching;
}

export interface Workmem {
  /** `wrapLanguageModel({ model, middleware: workmem.middleware })`. */
  middleware: LanguageModelV3Middleware;
  /**
   * workmem's tools as AI SDK tools: spread beside your own (`tools: { ...workmem.tools, ...yours }`).
   * They are here under their own names and under `workmem_` ones: when one of yours has one
   * of their names (`read`, say), yours stays and the model gets workmem's as `workmem_read`,
   * … (toolNaming.ts); otherwise the model gets them under their own names. The model sees one set.
   */
  tools: ToolSet;
  /** The session the loop drives (its id, events, memory, /context). */
  session: Session;
  /**
   * Of the messages your loop holds (as you pass them to generateText or streamText), the
   * indices of those workmem has archived, right after a call: drop them from your array, as
   * the LangChain middleware drops them from the agent's state (the session's log keeps them).
   */
  archived(messages: readonly ModelMessage[]): number[];
  /** Release the session (its lease) once the conversation is done. */
  close(): Promise<void>;
}

/** Open (or create) the session named by `sessionId` and return the middleware and tools that drive it. */
export async function createWorkmem(options: WorkmemOptions): Promise<Workmem> {
  const { model, contextWindow, compactionModel, caching: given, ...rest } = options;
  const window = contextWindow ?? modelLimits(model.modelId).contextWindow;
  // A compaction model of another provider caches as its own provider does; the session's requests go to `model`.
  const summarizer = aiSdkModel(compactionModel ?? model, { contextWindow: window, ...(given ? { caching: given } : {}) });
  const caching = given ?? cachingOf(model.provider);
  const loop = await HostLoop.open({
    ...rest,
    model: model.modelId,
    provider: model.provider,
    contextWindow: window,
    summarize: summarizer.summarize!,
    // The session weighs its memory refreshes by how the provider caches, as a Session of aiSdkModel does.
    caching,
  });
  const explicit = caching === 'explicit';
  const hide = redactor([]);
  const ownCalls = new AnswerToolCalls(loop);
  const { tool, jsonSchema } = await import('ai');
  const tools: ToolSet = {};
  /** Each of workmem's tools by every name it may be sent under: its description tells it from a host's of that name. */
  const own = new Map<string, string>();
  for (const prefix of ['', OWN_TOOL_PREFIX])
    for (const t of loop.tools) {
      const name = prefix + t.name;
      own.set(name, t.spec.description);
      tools[name] = tool({
        description: t.spec.description,
        inputSchema: jsonSchema(t.spec.parameters as never),
        execute: async (input: unknown, { toolCallId }: { toolCallId: string }) => {
          const call = { id: toolCallId, type: 'function' as const, function: { name, arguments: JSON.stringify(input) } };
          return (await ownCalls.run(call)).content;
        },
      });
    }
  const isOurs = (t: FunctionTool): boolean => own.get(t.name) === (t.description ?? '');

  const made: MadePrompt = new ConversionsByPlace();
  /** The host's call, prepared by the session: the call options to send instead. */
  const prepare = async (params: LanguageModelV3CallOptions): Promise<PreparedCall> => {
    ownCalls.calling();
    try {
      // The host's own tools: workmem's are named beside them.
      const host = (params.tools ?? []).filter((t) => t.type !== 'function' || !isOurs(t));
      const call = await loop.prepare({ ...conversationOf(params.prompt), tools: toolSpecsOf(host) });
      const names = call.request.tools.map((t) => t.name);
      const missing = names.filter((n) => loop.isOwnTool(n) && !own.has(n));
      if (missing.length)
        throw new TypeError(
          `workmem/ai-sdk: your tools take both the names of workmem's tools and their workmem_ names; workmem's would be sent as ${missing.join(', ')}, which workmem.tools does not hold: rename one of yours`,
        );
      return call;
    } catch (error) {
      ownCalls.answered([]);
      throw error;
    }
  };
  /** The answer recorded: workmem's calls in it can run. */
  const answered = async (call: PreparedCall, response: LLMResponse): Promise<void> => {
    try {
      await call.answer(response);
    } finally {
      ownCalls.answered(response.message.tool_calls ?? []);
    }
  };
  const sent = (params: LanguageModelV3CallOptions, call: PreparedCall): LanguageModelV3CallOptions => ({
    ...params,
    // workmem's tools under the names they are sent with now (the host holds them under both).
    ...(params.tools ? { tools: params.tools.filter((t) => t.type !== 'function' || !isOurs(t) || loop.isOwnTool(t.name)) } : {}),
    prompt: promptOf(call.request, explicit, made),
    // The session keeps prompt + this within the window.
    maxOutputTokens: Math.min(params.maxOutputTokens ?? Infinity, call.request.maxOutputTokens),
  });
  /** A failed call: made again once the session compacted an overflow, else the host gets the model's error. */
  const retried = async (call: PreparedCall, error: unknown): Promise<PreparedCall> => {
    const next = await call.fail(classifyAiSdk(error, HOST_TIMES, hide)).catch((failed: unknown) => {
      ownCalls.answered([]);
      throw failed;
    });
    if (!next) {
      ownCalls.answered([]);
      throw error;
    }
    return next;
  };

  const middleware: LanguageModelV3Middleware = {
    specificationVersion: 'v3',
    wrapGenerate: async ({ params, model: inner }) => {
      let call = await prepare(params);
      for (;;) {
        let result;
        try {
          result = await inner.doGenerate(sent(params, call));
        } catch (error) {
          call = await retried(call, error);
          continue;
        }
        for (const part of result.content) if (part.type === 'text') call.text(part.text);
        await answered(call, responseOf(result));
        return result;
      }
    },
    wrapStream: async ({ params, model: inner }) => {
      let call = await prepare(params);
      for (;;) {
        let result;
        try {
          result = await inner.doStream(sent(params, call));
        } catch (error) {
          call = await retried(call, error);
          continue;
        }
        const current = call;
        const assembled = new PartAssembler();
        let failed = false;
        // The host reads the parts as they come; the session records the answer at the finish.
        const stream = result.stream.pipeThrough(
          new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
            async transform(part, controller) {
              controller.enqueue(part);
              if (failed) return;
              if (part.type === 'error') {
                failed = true;
                await settleFailure(current, part.error);
                return;
              }
              const { text } = assembled.add(part);
              if (text) current.text(text);
              if (assembled.finished) await answered(current, assembled.finish());
            },
            async flush() {
              if (!failed && !assembled.finished) await settleFailure(current, new Error('the stream ended before the model finished'));
            },
          }),
        );
        return { ...result, stream };
      }
    },
  };

  const archived = (messages: readonly ModelMessage[]) => archivedIndices(loop.session.record, messages);
  return { middleware, tools, session: loop.session, archived, close: () => loop.close() };

  /** A stream that failed once its parts went out cannot be sent again: every retry the session offers is failed too. */
  async function settleFailure(call: PreparedCall, error: unknown): Promise<void> {
    let next: PreparedCall | null = call;
    try {
      while (next) next = await next.fail(classifyAiSdk(error, HOST_TIMES, hide));
    } finally {
      ownCalls.answered([]);
    }
  }
}

/** The host's loop keeps its own time (abortSignal, timeouts): no watchdog of ours to read. */
const HOST_TIMES: WatchdogState = {
  userAborted: false,
  timedOut: false,
  timeoutError: () => new LLMError('timeout', 'the model call timed out'),
};
