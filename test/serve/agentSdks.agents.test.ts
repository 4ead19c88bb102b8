/**
 * The two agent SDKs as their users run them, through `workmem serve` to the test server:
 * the OpenAI Agents SDK (@openai/agents) with its default model, which speaks the Responses
 * API, and the Anthropic SDK's (@anthropic-ai/sdk) tool runner, which speaks the Messages API
 * over a message thread by default — each with a tool of its own, streamed and not.
 * Installed from the registry into a cache of their own, as pi's test installs its agent
 * (the Agents SDK brings openai 7, which declares Node 22 and runs on 20); never workmem's
 * dependencies. The SDKs' loops run their tools; workmem's calls never reach them; the
 * session remembers what they were told.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { installedOnce } from '../installedOnce.js';
import { proxies, runClientTool, sessionState } from './proxyHarness.js';

const PACKAGES = ['@openai/agents@0.20.0', '@anthropic-ai/sdk@1.17.0', 'zod@4.6.7'];
/** The SDKs come from their own install, untyped here (their types are not workmem's dependencies). */
let load: (name: string) => any;
const proxied = proxies();

beforeAll(() => {
  const dir = installedOnce('workmem-test-agent-sdks-0.20.0-1.17.0', PACKAGES, join('node_modules', '@openai', 'agents', 'package.json'));
  load = createRequire(join(dir, 'package.json'));
});

const PROMPTS = [
  'My plant1 is rose1.',
  'My plant2 is rose2.',
  'Use the lookup tool with word1.',
  'What is my plant1?',
  'What is my plant2?',
];

describe('agent SDKs through workmem serve', () => {
  for (const stream of [false, true])
    it(`the OpenAI Agents SDK, its default (Responses) model and a tool of its own (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, server, home } = await proxied({ proxy: { contextWindow: 16_000 }, server: { strict: true } });
      const agents = load('@openai/agents');
      const OpenAI = load('openai').OpenAI;
      const { z } = load('zod');
      agents.setTracingDisabled(true);
      // The SDK's default provider (its Responses model), given a client at the proxy.
      const openAIClient = new OpenAI({
        baseURL: proxy.url,
        apiKey: proxy.token,
        maxRetries: 0,
        defaultHeaders: { 'x-workmem-session': `agents-${stream}` },
      });
      const runner = new agents.Runner({ modelProvider: new agents.OpenAIProvider({ openAIClient }) });
      const ran: string[] = [];
      const lookup = agents.tool({
        name: 'lookup',
        description: 'Look a word up',
        parameters: z.object({ input: z.string() }),
        execute: async ({ input }: { input: string }) => (ran.push(input), runClientTool('lookup', JSON.stringify({ input }))),
      });
      const agent = new agents.Agent({ name: 'gardener', instructions: 'You help with a garden.', model: 'workmem-test', tools: [lookup] });
      let history: unknown[] = [];
      const answers: string[] = [];
      for (const text of PROMPTS) {
        const result = await runner.run(agent, [...history, { role: 'user', content: text }], stream ? { stream: true } : {});
        if (stream) {
          for await (const _event of result);
          await result.completed;
        }
        answers.push(String(result.finalOutput));
        history = result.history;
      }
      expect(answers[3]).toContain('rose1');
      expect(answers[4]).toContain('rose2');
      expect(ran).toEqual(['word1']);
      expect(JSON.stringify(history)).not.toMatch(new RegExp(`"name":"(${[...WORKMEM_TOOL_NAMES].join('|')})"`));
      expect(server.requests.every((r) => r.protocol === 'responses' && r.status === 200)).toBe(true);
      const state = await sessionState(sessionIdFor(`agents-${stream}`), { home });
      expect(state.overview).toContain('rose2');
      expect(state.log.filter((e) => e.type === 'branch')).toEqual([]);
    });

  for (const stream of [false, true])
    it(`the Anthropic SDK's tool runner over its message thread, a tool of its own (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, server, home } = await proxied({ proxy: { contextWindow: 16_000 } });
      const Anthropic = load('@anthropic-ai/sdk').Anthropic;
      const { betaTool } = load('@anthropic-ai/sdk/helpers/beta/json-schema');
      const client = new Anthropic({
        baseURL: proxy.url.replace(/\/v1$/, ''),
        apiKey: proxy.token,
        maxRetries: 0,
        defaultHeaders: { 'x-workmem-session': `anthropic-${stream}` },
      });
      const ran: string[] = [];
      const lookup = betaTool({
        name: 'lookup',
        description: 'Look a word up',
        inputSchema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
        run: async ({ input }: { input: string }) => (ran.push(input), runClientTool('lookup', JSON.stringify({ input }))),
      });
      let messages: unknown[] = [];
      const answers: string[] = [];
      for (const text of PROMPTS) {
        const runner = client.beta.messages.toolRunner({
          model: 'workmem-test',
          max_tokens: 2000,
          system: 'You help with a garden.',
          messages: [...messages, { role: 'user', content: text }],
          tools: [lookup],
          stream,
        });
        const final = await runner.runUntilDone();
        answers.push((final.content as { type: string; text?: string }[]).map((b) => b.text ?? '').join(''));
        messages = runner.params.messages;
      }
      expect(answers[3]).toContain('rose1');
      expect(answers[4]).toContain('rose2');
      expect(ran).toEqual(['word1']);
      expect(JSON.stringify(messages)).not.toMatch(new RegExp(`"name":"(${[...WORKMEM_TOOL_NAMES].join('|')})"`));
      // The runner continues its thread, which the proxy does not hold: it sends the whole conversation instead.
      expect(server.requests.every((r) => r.protocol === 'messages' && r.status === 200 && !('thread' in (r.raw as object)))).toBe(true);
      const state = await sessionState(sessionIdFor(`anthropic-${stream}`), { home });
      expect(state.overview).toContain('rose2');
      expect(state.log.filter((e) => e.type === 'branch')).toEqual([]);
    });
});
