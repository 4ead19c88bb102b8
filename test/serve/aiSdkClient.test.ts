/**
 * The AI SDK's @ai-sdk/openai-compatible provider with streamText and a host tool of its
 * own, pointed at `workmem serve` instead of the model: the host's loop runs its tool and
 * sends its whole conversation each step, as the SDK does; the proxy keeps the session
 * (memory written, late facts answered), and the host never meets workmem's tools.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { proxies, sessionState } from './proxyHarness.js';

const proxied = proxies();

describe('the AI SDK through workmem serve', () => {
  it('streamText with a host tool: its calls round-trip, the session remembers', async () => {
    const { proxy, home } = await proxied({ proxy: { contextWindow: 8000 } });
    const provider = createOpenAICompatible({
      name: 'proxied',
      baseURL: proxy.url,
      apiKey: proxy.token,
      includeUsage: true,
      headers: { 'x-workmem-session': 'ai-sdk' },
    });
    const ran: string[] = [];
    const tools = {
      weather: tool({
        description: 'The weather in a city',
        inputSchema: jsonSchema<{ input: string }>({ type: 'object', properties: { input: { type: 'string' } }, required: ['input'] }),
        execute: async ({ input }) => {
          ran.push(input);
          return `Sunny in ${input}.`;
        },
      }),
    };
    const prompts = [
      ...Array.from({ length: 5 }, (_, i) => `My plant${i + 1} is rose${i + 1}.`),
      'Use the weather tool with city1.',
      'Use the weather tool with city2.',
      ...Array.from({ length: 5 }, (_, i) => `What is my plant${i + 1}?`),
    ];
    const messages: ModelMessage[] = [];
    const answers: string[] = [];
    let streamedParts = 0;
    for (const text of prompts) {
      messages.push({ role: 'user', content: text });
      const result = streamText({
        model: provider.chatModel('workmem-test'),
        system: 'You help with a garden.',
        messages,
        tools,
        stopWhen: stepCountIs(5),
      });
      for await (const part of result.textStream) if (part) streamedParts++;
      messages.push(...(await result.response).messages);
      answers.push(await result.text);
      const calls = (await result.steps).flatMap((s) => s.toolCalls.map((c) => c.toolName));
      expect(calls.filter((c) => WORKMEM_TOOL_NAMES.has(c))).toEqual([]);
    }
    expect(ran).toEqual(['city1', 'city2']);
    expect(streamedParts).toBeGreaterThan(prompts.length);
    expect(answers.slice(-5).filter((a, i) => a.includes(`rose${i + 1}`)).length, answers.join(' | ')).toBe(5);
    const state = await sessionState(sessionIdFor('ai-sdk'), { home });
    expect(state.overview).toContain('rose5');
    expect(state.log.filter((e) => e.type === 'branch')).toEqual([]);
  });
});
