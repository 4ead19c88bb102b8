/**
 * Pinning through the AI SDK: rules given to createWorkmem({ pinned }) and a task statement
 * marked `providerOptions: { workmem: { pinned: true } }` in generateText's messages are
 * pinned as a Session pins them (createSession's pinned, prompt(text, { pin: true })): the
 * test server receives the same requests from both, the pins in every one of them, sent
 * first once phase 2 carries only the recent turns, and none archived by the compactions.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, wrapLanguageModel, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { aiSdkModel } from '../../src/aiSdk/aiSdkModel.js';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import type { TestServer } from '../../src/testing/index.js';
import { collect, newSession, tempHome } from '../helpers.js';
import { expectPinsHeld, now, pinServers, prompts, RULES, settings, TASK, WINDOW } from '../session/pinnedConversation.js';

const server = pinServers();
const modelOf = (s: TestServer) => createOpenAICompatible({ name: 'test', baseURL: s.baseURL, includeUsage: true }).chatModel('gpt-4o');

describe('pinning through the AI SDK middleware', () => {
  it('createWorkmem({ pinned }) and a message pinned by its providerOptions send what a Session with the same pins sends', async () => {
    const own = await server();
    const session = await newSession({ llm: aiSdkModel(modelOf(own), { contextWindow: WINDOW }), settings, now, pinned: [RULES] });
    for (const text of prompts()) await session.prompt(text, { pin: text === TASK });
    await session.close();

    const hosted = await server();
    const model = modelOf(hosted);
    const workmem = await createWorkmem({
      model,
      contextWindow: WINDOW,
      settings,
      home: tempHome(),
      cwd: '/work/project',
      env: {},
      now,
      pinned: [RULES],
    });
    const events = collect(workmem.session);
    const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
    const messages: ModelMessage[] = [];
    for (const text of prompts()) {
      messages.push(
        text === TASK ? { role: 'user', content: text, providerOptions: { workmem: { pinned: true } } } : { role: 'user', content: text },
      );
      const result = await generateText({ model: wrapped, messages, tools: workmem.tools, stopWhen: stepCountIs(20) });
      messages.push(...result.response.messages);
    }
    const items = workmem.session.history.items.slice(0, workmem.session.history.length);
    await workmem.close();

    const wire = (s: TestServer) => s.requests.map((r) => r.body.messages as { role: string; content: string | null }[]);
    expect(wire(hosted)).toEqual(wire(own));
    expectPinsHeld(
      wire(hosted),
      items.filter((i) => i.pinned).map((i) => i.message.content),
      events,
    );
  });
});
