/**
 * workmem inside an AI SDK loop: the same conversation through a Session (aiSdkModel) and
 * through generateText, streamText and ToolLoopAgent with the middleware, each against a
 * test server running the same protocol follower: the server receives the same messages
 * and tools, and the answers and memory agree.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, streamText, tool, ToolLoopAgent, wrapLanguageModel, type ModelMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkModel } from '../../src/aiSdk/aiSdkModel.js';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { defineTool } from '../../src/tools/tool.js';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { newSession, tempHome } from '../helpers.js';

const INSTRUCTIONS = 'You help with a garden.';
const WINDOW = 6000;
const settings = { contextWindow: WINDOW, reserveOutputTokens: 500 };
const now = (): number => Date.UTC(2026, 10, 25, 12);

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ input: z.string() }),
  execute: async ({ input }) => `Sunny in ${input}. ${'Long forecast text. '.repeat(40)}`,
});
const aiWeather = tool({
  description: weather.spec.description,
  inputSchema: jsonSchema<{ input: string }>(weather.spec.parameters as never),
  execute: async ({ input }) => String(await weather.execute({ input }, {} as never)),
});

function prompts(): string[] {
  const out: string[] = [];
  for (let i = 1; i <= 10; i++) out.push(`My plant${i} is rose${i}.`);
  for (let i = 1; i <= 6; i++) out.push(`Use the weather tool with city${i}.`);
  for (let i = 1; i <= 8; i++) out.push(`Small talk number ${i}: ${'the weather is mild, '.repeat(10)}`);
  for (let i = 1; i <= 10; i++) out.push(`What is my plant${i}?`);
  return out;
}

const servers: TestServer[] = [];
afterEach(async () => void (await Promise.all(servers.splice(0).map((s) => s.close()))));
async function server(): Promise<TestServer> {
  const s = await startTestServer({ policy: protocolFollower({ seed: 2 }), promptCaching: 'off' });
  servers.push(s);
  return s;
}
const providerOf = (s: TestServer) => createOpenAICompatible({ name: 'test', baseURL: s.baseURL, includeUsage: true });

type Loop = 'generateText' | 'streamText' | 'ToolLoopAgent';

async function viaMiddleware(loop: Loop): Promise<{ server: TestServer; answers: string[]; memory: string }> {
  const s = await server();
  const model = providerOf(s).chatModel('gpt-4o');
  const workmem = await createWorkmem({ model, contextWindow: WINDOW, settings, home: tempHome(), cwd: '/work/project', env: {}, now });
  const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
  const tools = { ...workmem.tools, weather: aiWeather };
  const messages: ModelMessage[] = [];
  const answers: string[] = [];
  const agent = new ToolLoopAgent({ model: wrapped, instructions: INSTRUCTIONS, tools, stopWhen: stepCountIs(20) });
  for (const text of prompts()) {
    messages.push({ role: 'user', content: text });
    const common = { model: wrapped, system: INSTRUCTIONS, messages, tools, stopWhen: stepCountIs(20) };
    const result =
      loop === 'generateText'
        ? await generateText(common)
        : loop === 'streamText'
          ? streamText(common)
          : await agent.generate({ messages });
    const response = await result.response;
    messages.push(...response.messages);
    answers.push(await result.text);
  }
  const memory = workmem.session.memory();
  await workmem.close();
  return { server: s, answers, memory };
}

describe('the AI SDK middleware', () => {
  it('generateText, streamText and ToolLoopAgent with the middleware send what a Session sends', async () => {
    const own = await server();
    const session = await newSession({
      llm: aiSdkModel(providerOf(own).chatModel('gpt-4o'), { contextWindow: WINDOW }),
      instructions: INSTRUCTIONS,
      tools: [weather],
      settings,
      now,
    });
    const ownAnswers: string[] = [];
    for (const text of prompts()) ownAnswers.push((await session.prompt(text)).text);
    const ownMemory = session.memory();
    await session.close();
    const wire = (s: TestServer) => s.requests.map((r) => ({ messages: r.body.messages, tools: r.body.tools }));

    expect(own.requests.length).toBeGreaterThan(30);
    for (const loop of ['generateText', 'streamText', 'ToolLoopAgent'] as const) {
      const { server: s, answers, memory } = await viaMiddleware(loop);
      expect(s.requests.length, loop).toBe(own.requests.length);
      const theirs = wire(s);
      for (const [i, request] of wire(own).entries()) expect(theirs[i], `${loop}: request ${i + 1}`).toEqual(request);
      // Besides messages and tools, the bodies differ only in how the host made the call: the AI SDK's
      // generateText and agents ask for no stream, and name the tool choice that is the default anyway.
      const rest = (b: Record<string, unknown>, drop: string[]) => Object.fromEntries(Object.entries(b).filter(([k]) => !drop.includes(k)));
      const streamed = loop === 'streamText';
      for (const [i, request] of s.requests.entries()) {
        expect(request.body.tool_choice).toBe('auto');
        expect(rest(request.body, ['messages', 'tools', 'tool_choice'])).toEqual(
          rest(own.requests[i]!.body, ['messages', 'tools', ...(streamed ? [] : ['stream', 'stream_options'])]),
        );
      }
      expect(answers, loop).toEqual(ownAnswers);
      expect(memory, loop).toBe(ownMemory);
    }
  }, 120_000);
});
