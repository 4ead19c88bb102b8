/**
 * workmem inside a LangChain.js agent (createAgent): an agent middleware and workmem's tools
 * as LangChain tools, over one session (HostLoop). On each model call the middleware hands
 * the session every message the agent holds and calls the model with the request the
 * session builds instead (memory, history per phase, <context_meta>, the fallback first);
 * the answer is recorded and returned to the agent as the model gave it, and what workmem has
 * archived leaves the agent's state (RemoveMessage; the log keeps it). An overflow is compacted once and the call made again. The agent runs
 * the tools: its own, and workmem's (memory, compact_history), which run against the session.
 */
import { randomUUID } from 'node:crypto';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, RemoveMessage, ToolMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { createMiddleware, type AgentMiddleware } from 'langchain';
import { archivedHostRanges } from '../history/archivedHostMessages.js';
import type { ToolCall } from '../history/messages.js';
import type { LLM, LLMRequest } from '../llm/llm.js';
import { modelLimits } from '../llm/models.js';
import { cachingOf } from '../llm/providerCaching.js';
import { redactor } from '../secrets/redact.js';
import { AnswerToolCalls } from '../session/answerToolCalls.js';
import { HostLoop, type HostLoopOptions, type PreparedCall } from '../session/hostLoop.js';
import type { Session } from '../session/session.js';
import type { ProviderCaching } from '../settings/settings.js';
import { classifyLangChain } from './langchainErrors.js';
import { conversationOf, requestMessagesOf, responseOf, toolSpecsOf, type RequestMessages } from './langchainMessages.js';
import { ConversionsByPlace } from '../llm/conversionsByPlace.js';

/** createWorkmem's options: the session's (store, sessionId, settings, …) and the agent's model. */
export interface WorkmemOptions extends Omit<HostLoopOptions, 'model' | 'contextWindow' | 'summarize'> {
  /** The agent's model: its name picks the token counter and, by default, the window; it writes compaction summaries. */
  model: BaseChatModel;
  /** Default: the known window of the model's name, else 32768. */
  contextWindow?: number;
  /** A model for compaction summaries (often a cheaper one); default `model`. */
  compactionModel?: BaseChatModel;
  /**
   * How `model`'s provider caches prompts, for the session's memory refreshes: 'explicit'
   * (Anthropic-style: only up to marked breakpoints, writes billed at 1.25 ×) or 'automatic'
   * (OpenAI-style prefix caching). Default: explicit for Anthropic and Bedrock models (their
   * `ls_provider`), else automatic. The middleware marks no breakpoints itself.
   */
  caching?: ProviderCaching;
}

/** workmem in a LangChain agent: the middleware, workmem's tools, and the session they drive. */
export interface Workmem {
  /**
   * `createAgent({ model, tools, middleware: [workmem.middleware] })`: it brings workmem's tools
   * with it, on each model call, named beside the agent's own (toolNaming.ts: `workmem_read`, …
   * when one of the agent's tools is named `read`), and runs them itself.
   */
  middleware: AgentMiddleware;
  /** workmem's tools as LangChain tools under their own names (the middleware brings its own; pass these only to another agent). */
  tools: StructuredToolInterface[];
  /** The session the agent drives (its id, events, memory, /context). */
  session: Session;
  /** Release the session (its lease) once the conversation is done. */
  close(): Promise<void>;
}

/** Open (or create) the session named by `sessionId` and return the middleware and tools that drive it. */
export async function createWorkmem(options: WorkmemOptions): Promise<Workmem> {
  const { model, contextWindow, compactionModel, caching, ...rest } = options;
  const name = modelName(model);
  const window = contextWindow ?? modelLimits(name).contextWindow;
  const summarizer = compactionModel ?? model;
  const summarize: LLM['summarize'] = async (request, { signal }) => responseOf(await invoke(summarizer, request, signal));
  const provider = providerOf(model);
  const loop = await HostLoop.open({
    ...rest,
    model: name,
    provider,
    contextWindow: window,
    summarize,
    caching: caching ?? cachingOf(provider),
  });
  const hide = redactor([]);
  const ownCalls = new AnswerToolCalls(loop);
  const requests: RequestMessages = new ConversionsByPlace();

  /** workmem's tools as LangChain tools under one prefix (toolNaming.ts), made once each. */
  const named = new Map<string, StructuredToolInterface[]>();
  const toolsAs = (prefix: string): StructuredToolInterface[] => {
    let made = named.get(prefix);
    if (!made)
      named.set(
        prefix,
        (made = loop.tools.map((t) => {
          const name = prefix + t.name;
          return tool(
            async (input: unknown, runtime: { toolCall?: { id?: string } }) => {
              const id = runtime?.toolCall?.id ?? `call_${randomUUID()}`;
              return (await ownCalls.run({ id, type: 'function', function: { name, arguments: JSON.stringify(input) } })).content;
            },
            { name, description: t.spec.description, schema: t.spec.parameters as never },
          ) as StructuredToolInterface;
        })),
      );
    return made;
  };
  const tools = toolsAs('');
  // workmem's tool objects, whatever their names: an agent given workmem.tools too does not get them twice.
  const ours = new Set<unknown>(tools);

  const middleware = createMiddleware({
    name: 'workmem',
    // No tools registered: they are added to each model call under the names they take beside the agent's, and run here.
    wrapToolCall: async (request, handler) => {
      const { toolCall } = request;
      if (!loop.isOwnTool(toolCall.name)) {
        try {
          return await handler(request);
        } catch (error) {
          // With a wrapToolCall hook LangChain would let a tool's error end the run; without one it
          // tells the model, and so does this (an interrupt, or an abort, still ends it).
          const e = error as { name?: unknown; message?: unknown };
          if (e?.name === 'GraphInterrupt' || e?.name === 'NodeInterrupt' || request.runtime?.signal?.aborted) throw error;
          const content = e?.name === 'ToolInvocationError' ? String(e.message) : `${String(error)}\n Please fix your mistakes.`;
          return new ToolMessage({ content, tool_call_id: toolCall.id ?? '', name: toolCall.name, status: 'error' });
        }
      }
      const id = toolCall.id ?? `call_${randomUUID()}`;
      const call = { id, type: 'function' as const, function: { name: toolCall.name, arguments: JSON.stringify(toolCall.args ?? {}) } };
      return new ToolMessage({ content: (await ownCalls.run(call)).content, tool_call_id: id, name: toolCall.name });
    },
    // What workmem archived leaves the agent's state, as LangChain's summarization does: the
    // log keeps it, and each call and checkpoint stops growing with the conversation.
    afterModel: (state) => {
      const { conversation } = conversationOf(undefined, state.messages);
      const removed: RemoveMessage[] = [];
      for (const [start, end] of archivedHostRanges(loop.session.record, conversation))
        for (let i = start; i < end; i++) {
          const id = state.messages[i]!.id;
          if (id) removed.push(new RemoveMessage({ id }));
        }
      return removed.length ? { messages: removed } : undefined;
    },
    wrapModelCall: async (request, handler) => {
      const { instructions, conversation } = conversationOf(request.systemMessage, request.messages);
      const host = request.tools.filter((t) => !ours.has(t));
      ownCalls.calling();
      let calls: ToolCall[] = [];
      try {
        let call: PreparedCall = await loop.prepare({ instructions, conversation, tools: toolSpecsOf(host) });
        const current = toolsAs(loop.ownToolName(''));
        for (const t of current) ours.add(t);
        // workmem's tools first, as a Session sends them.
        const given = [...current, ...host];
        for (;;) {
          const { system, messages } = requestMessagesOf(call.request.messages, requests);
          let answer: AIMessage;
          try {
            answer = await handler({ ...request, systemMessage: system, messages, tools: given });
          } catch (error) {
            const next = await call.fail(classifyLangChain(error, hide));
            if (!next) throw error;
            call = next;
            continue;
          }
          const response = responseOf(answer);
          if (response.message.content) call.text(response.message.content);
          await call.answer(response);
          calls = response.message.tool_calls ?? [];
          return answer;
        }
      } finally {
        ownCalls.answered(calls);
      }
    },
  });

  return { middleware: middleware as unknown as AgentMiddleware, tools, session: loop.session, close: () => loop.close() };
}

/** The model's name as its provider knows it (ChatOpenAI's `model`, older classes' `modelName`). */
function modelName(model: BaseChatModel): string {
  const named = model as unknown as { model?: unknown; modelName?: unknown };
  for (const value of [named.model, named.modelName]) if (typeof value === 'string' && value) return value;
  return model.getName();
}

/** Who serves the model, as LangChain's tracing names it (`ls_provider`: `openai`, `anthropic`, …): for telemetry, and its caching. */
function providerOf(model: BaseChatModel): string | undefined {
  try {
    const provider = (model as unknown as { getLsParams?(options: object): { ls_provider?: unknown } }).getLsParams?.({})?.ls_provider;
    return typeof provider === 'string' && provider ? provider : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One call of a chat model with workmem's request, for summaries: no tools, and none of the
 * agent's callbacks (it runs inside the agent's model call, whose stream would carry the
 * summary to the host as if it were the agent's answer).
 */
async function invoke(model: BaseChatModel, request: LLMRequest, signal: AbortSignal): Promise<AIMessage> {
  const { system, messages } = requestMessagesOf(request.messages);
  return (await model.invoke([...(system.text ? [system] : []), ...messages], { signal, callbacks: [] })) as AIMessage;
}
