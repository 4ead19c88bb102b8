/**
 * A policy as an in-process LLM: the same decisions as over HTTP, without the network.
 * For fast tests and benchmarks; usage is counted from the request like the test server.
 */
import { LLMError, type LLM, type LLMCallOptions, type LLMRequest, type LLMResponse } from '../llm/llm.js';
import type { AssistantMessage, ChatMessage } from '../history/messages.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { ChatRequest, Policy } from './wire.js';

export interface PolicyModelOptions {
  model?: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  /** When given, usage is reported, counted with it. */
  counter?: TokenCounter;
}

/** The counter, its messages counted once each: a request carries the same history messages call after call. */
function countingOnce(counter: TokenCounter): TokenCounter {
  const counted = new WeakMap<ChatMessage, number>();
  return {
    ...counter,
    message(message) {
      let n = counted.get(message);
      if (n === undefined) counted.set(message, (n = counter.message(message)));
      return n;
    },
  };
}

export function policyModel(policy: Policy, options: PolicyModelOptions = {}): LLM & { readonly requests: number } {
  let index = 0;
  const counter = options.counter && countingOnce(options.counter);
  return {
    model: options.model ?? 'policy',
    contextWindow: options.contextWindow ?? 128_000,
    maxOutputTokens: options.maxOutputTokens ?? 4_096,
    get requests() {
      return index;
    },
    async complete(request: LLMRequest, call: LLMCallOptions): Promise<LLMResponse> {
      if (call.signal.aborted) throw new LLMError('aborted', 'the request was aborted');
      const body: ChatRequest = {
        model: options.model ?? 'policy',
        messages: request.messages,
        tools: request.tools.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.parameters },
        })),
      };
      const reply = await policy(body, { index: index++ });
      const message: AssistantMessage = { role: 'assistant', content: reply.content ?? null };
      if (reply.toolCalls?.length) {
        message.tool_calls = reply.toolCalls.map((c, i) => ({
          id: c.id ?? `call_${index}_${i}`,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        }));
      }
      if (message.content) call.onText(message.content);
      const usage = counter
        ? { promptTokens: counter.request(request.messages, request.tools), completionTokens: counter.text(message.content ?? '') }
        : null;
      return { message, usage, finishReason: reply.finishReason ?? (message.tool_calls ? 'tool_calls' : 'stop') };
    },
  };
}
