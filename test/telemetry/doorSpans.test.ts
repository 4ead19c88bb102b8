/**
 * Turns in the service's own traces, with a context manager registered as a service's SDK
 * registers one: the AI SDK middleware's turns under the host's span (the context the host's
 * call came in), with the model calls, workmem's tools and the memory they write under them
 * and the provider named by the host's model; LangChain's agent the same; a Session's turns
 * under the span each prompt was sent in, also when it waited in the queue behind another.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { generateText, stepCountIs, wrapLanguageModel, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent } from 'langchain';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { createWorkmem as createLangchainWorkmem } from '../../src/langchain/workmemMiddleware.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { protocolFollower, scripted } from '../../src/testing/index.js';
import { newSession, tempHome, testServers } from '../helpers.js';
import { otelCapture } from './otelTesting.js';

const serve = testServers();
// A service's SDK registers a context manager; only it, and only for this file's tests.
const manager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(manager.enable()));
afterAll(() => context.disable());

describe('OpenTelemetry through the AI SDK middleware', () => {
  it('puts each turn of the host’s loop under the host’s span, with its model calls, tools and memory writes', async () => {
    const server = await serve(
      scripted([
        'Noted: Lisbon in May.',
        { toolCalls: [{ name: 'write', arguments: JSON.stringify({ path: 'overview.md', content: '# Task\nLisbon trip, May.\n' }) }] },
        'The hotel near the river is booked.',
      ]),
    );
    const capture = otelCapture();
    const model = createOpenAICompatible({ name: 'test', baseURL: server.baseURL, includeUsage: true }).chatModel('gpt-4o');
    const workmem = await createWorkmem({
      model,
      contextWindow: 32_000,
      home: tempHome(),
      cwd: '/work/project',
      env: {},
      telemetry: { tracerProvider: capture.tracerProvider, meterProvider: capture.meterProvider },
    });
    const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
    const host = capture.tracerProvider.getTracer('host');
    const messages: ModelMessage[] = [];
    for (const text of ['We are planning a trip to Lisbon in May.', 'Book the hotel near the river.']) {
      messages.push({ role: 'user', content: text });
      await host.startActiveSpan('host turn', async (span) => {
        const result = await generateText({ model: wrapped, messages, tools: workmem.tools, stopWhen: stepCountIs(10) });
        messages.push(...result.response.messages);
        span.end();
      });
    }
    await workmem.close();
    const spans = capture.spans();
    await capture.close();

    const hostTurns = spans.filter((s) => s.name === 'host turn');
    const turns = spans.filter((s) => s.name === 'invoke_agent workmem');
    expect(turns.length).toBe(2);
    expect(turns.map((t) => t.parentSpanContext?.spanId)).toEqual(hostTurns.map((h) => h.spanContext().spanId));
    const under = (parent: (typeof spans)[number]) => spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
    for (const turn of turns) {
      const chats = under(turn).filter((s) => s.name === 'chat gpt-4o');
      expect(chats.length).toBeGreaterThan(0);
      for (const chat of chats) expect(chat.attributes).toMatchObject({ 'gen_ai.provider.name': 'test', 'gen_ai.request.model': 'gpt-4o' });
    }
    // The model writes its memory with workmem's tool, run by the middleware in the session.
    const write = spans.find((s) => s.name === 'execute_tool write');
    expect(write).toBeDefined();
    expect(under(write!).map((s) => s.name)).toEqual(['upsert_memory']);
    expect(turns.map((t) => t.spanContext().spanId)).toContain(write!.parentSpanContext?.spanId);
  });

  it('puts each turn of a LangChain agent under the agent’s call, the provider named by the model', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const capture = otelCapture();
    const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', configuration: { baseURL: server.baseURL } });
    const workmem = await createLangchainWorkmem({
      model,
      contextWindow: 32_000,
      home: tempHome(),
      cwd: '/work/project',
      env: {},
      telemetry: { tracerProvider: capture.tracerProvider },
    });
    const agent = createAgent({ model, middleware: [workmem.middleware] });
    const host = capture.tracerProvider.getTracer('host');
    let messages: BaseMessage[] = [];
    for (const text of ['My name is Ada.', 'What is my name?'])
      await host.startActiveSpan('agent call', async (span) => {
        messages = (await agent.invoke({ messages: [...messages, new HumanMessage(text)] })).messages;
        span.end();
      });
    await workmem.close();
    const spans = capture.spans();
    await capture.close();
    const calls = spans.filter((s) => s.name === 'agent call').map((s) => s.spanContext().spanId);
    const turns = spans.filter((s) => s.name === 'invoke_agent workmem');
    expect(turns.map((t) => t.parentSpanContext?.spanId)).toEqual(calls);
    const chats = spans.filter((s) => s.name === 'chat gpt-4o');
    expect(chats.length).toBeGreaterThanOrEqual(2);
    for (const chat of chats) expect(chat.attributes['gen_ai.provider.name']).toBe('openai');
    // The follower's first answer writes its memory through workmem's tool, under the first turn.
    const write = spans.find((s) => s.name === 'execute_tool write')!;
    expect(write.parentSpanContext?.spanId).toBe(turns[0]!.spanContext().spanId);
  });

  it('puts a Session’s turn under the span its prompt was sent in, also when it waited behind another', async () => {
    const capture = otelCapture();
    const llm = scriptedModel([{ text: 'one', delayMs: 50 }, { text: 'two' }]);
    const session = await newSession({ llm, telemetry: { tracerProvider: capture.tracerProvider } });
    const service = capture.tracerProvider.getTracer('service');
    const handled = (name: string, text: string) =>
      service.startActiveSpan(name, async (span) => {
        await session.prompt(text);
        span.end();
      });
    await Promise.all([handled('request A', 'first'), handled('request B', 'second')]);
    await session.close();
    const spans = capture.spans();
    await capture.close();
    const id = (name: string) => spans.find((s) => s.name === name)!.spanContext().spanId;
    const turns = spans
      .filter((s) => s.name === 'invoke_agent workmem')
      .sort((a, b) => Number(a.attributes['workmem.turn']) - Number(b.attributes['workmem.turn']));
    expect(turns.map((t) => t.parentSpanContext?.spanId)).toEqual([id('request A'), id('request B')]);
  });
});
