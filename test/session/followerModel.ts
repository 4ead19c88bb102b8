/**
 * AI SDK's MockLanguageModelV3 answering as a test server's policy would, in process: each
 * prompt is read as Chat Completions messages and tools, recorded as the body a server would
 * have received (no stream flags: the mock receives a prompt, not a body), answered by the
 * policy and streamed back, with usage counted as the test server counts it.
 */
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { messagesOf, toolSpecsOf } from '../../src/aiSdk/hostPrompt.js';
import { policyModel, type Policy } from '../../src/testing/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';

export async function followerModel(
  policy: Policy,
  options: { model: string; window: number; reserve: number },
): Promise<{ model: MockLanguageModelV3; requests: string[] }> {
  const counter = await loadTokenCounter(options.model);
  const follower = policyModel(policy, { model: options.model, contextWindow: options.window });
  const requests: string[] = [];

  const answer = async (call: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamPart[]> => {
    const messages = messagesOf(call.prompt);
    const tools = toolSpecsOf(call.tools);
    const wire = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
    requests.push(
      JSON.stringify({ model: options.model, messages, ...(wire.length ? { tools: wire } : {}), max_tokens: call.maxOutputTokens }),
    );
    const maxOutputTokens = call.maxOutputTokens ?? options.reserve;
    const { message } = await follower.complete(
      { messages, tools, maxOutputTokens },
      { signal: new AbortController().signal, onText: () => {} },
    );
    const calls = message.tool_calls ?? [];
    const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
    if (message.content)
      parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: message.content }, { type: 'text-end', id: 't' });
    for (const c of calls) parts.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input: c.function.arguments });
    const output =
      counter.text(message.content ?? '') +
      calls.reduce((n, c) => n + counter.text(c.function.name) + counter.text(c.function.arguments), 0);
    parts.push({
      type: 'finish',
      finishReason: { unified: calls.length ? 'tool-calls' : 'stop', raw: calls.length ? 'tool_calls' : 'stop' },
      usage: {
        inputTokens: { total: counter.request(messages, tools), noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: output, text: undefined, reasoning: undefined },
      },
    });
    return parts;
  };

  const model = new MockLanguageModelV3({
    modelId: options.model,
    doStream: async (call) => {
      const parts = await answer(call);
      return { stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) };
    },
  });
  return { model, requests };
}
