/**
 * Pinning through the LangChain middleware: rules given to createWorkmem({ pinned }) and a
 * task statement marked `additional_kwargs: { workmem: { pinned: true } }` are pinned as a
 * Session pins them: the server receives the same messages from both (but for the empty
 * content ChatOpenAI writes for an answer that only called tools), the pins in every request,
 * sent first once phase 2 carries only the recent turns, and none archived. A pin on another
 * kind of message is refused, and the session goes on.
 */
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { createWorkmem } from '../../src/langchain/workmemMiddleware.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import type { TestServer } from '../../src/testing/index.js';
import { collect, newSession, tempHome } from '../helpers.js';
import { expectPinsHeld, now, pinServers, prompts, RULES, settings, TASK, WINDOW } from '../session/pinnedConversation.js';

const server = pinServers();
const chatModel = (s: TestServer) =>
  new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', maxTokens: 500, configuration: { baseURL: s.baseURL } });
type Sent = { role: string; content: string | null };
/** ChatOpenAI sends "" where a Session sends null (an answer that only called tools). */
const wire = (s: TestServer): Sent[][] =>
  s.requests.map((r) => (r.body.messages as Sent[]).map((m) => (m.role === 'assistant' && m.content === '' ? { ...m, content: null } : m)));

describe('pinning through the LangChain middleware', () => {
  it('createWorkmem({ pinned }) and a human message pinned by its additional_kwargs send what a Session with the same pins sends', async () => {
    const own = await server();
    const session = await newSession({
      llm: openaiChat({ baseURL: own.baseURL, apiKey: 'test', model: 'gpt-4o' }),
      settings,
      now,
      pinned: [RULES],
    });
    for (const text of prompts()) await session.prompt(text, { pin: text === TASK });
    await session.close();

    const hosted = await server();
    const model = chatModel(hosted);
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
    const agent = createAgent({ model, middleware: [workmem.middleware] });
    let messages: BaseMessage[] = [];
    for (const text of prompts()) {
      const message =
        text === TASK ? new HumanMessage({ content: text, additional_kwargs: { workmem: { pinned: true } } }) : new HumanMessage(text);
      messages = (await agent.invoke({ messages: [...messages, message] })).messages;
    }
    const items = workmem.session.history.items.slice(0, workmem.session.history.length);
    await workmem.close();

    const sent = wire(hosted).map((request) => request.map(({ role, content }) => ({ role, content })));
    expect(sent).toEqual(wire(own).map((request) => request.map(({ role, content }) => ({ role, content }))));
    expectPinsHeld(
      sent,
      items.filter((i) => i.pinned).map((i) => i.message.content),
      events,
    );
  });

  it('refuses a pin on an ai message, saying so, and the session goes on', async () => {
    const s = await server();
    const model = chatModel(s);
    const workmem = await createWorkmem({
      model,
      contextWindow: 32_000,
      settings: { reserveOutputTokens: 500 },
      home: tempHome(),
      cwd: '/w',
      env: {},
    });
    const agent = createAgent({ model, middleware: [workmem.middleware] });
    const pinnedAnswer = new AIMessage({ content: 'Noted.', additional_kwargs: { workmem: { pinned: true } } });
    await expect(agent.invoke({ messages: [new HumanMessage('Hello.'), pinnedAnswer, new HumanMessage('Go on.')] })).rejects.toThrow(
      /ai message is marked pinned, but only a human message can be pinned/,
    );
    const state = await agent.invoke({ messages: [new HumanMessage('My name is Ada.')] });
    expect(state.messages.at(-1)!.text.length).toBeGreaterThan(0);
    expect(workmem.session.history.items.slice(0, workmem.session.history.length).some((i) => i.pinned)).toBe(false);
    await workmem.close();
  });
});
