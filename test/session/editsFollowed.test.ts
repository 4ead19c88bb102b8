/**
 * Any edit of a host's history is followed, in every door that takes a host's whole
 * conversation: the AI SDK middleware, the LangChain middleware and the proxy. A host that
 * changes its first, a middle or its last message (the same length or not) takes a branch
 * from the first changed message: the session's history is the host's, once, and the model
 * never gets the old text again, nor the history twice. A tool's result is known by its text
 * as the client sent it too: one redacted in place is an edit.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, stepCountIs, wrapLanguageModel, type ModelMessage } from 'ai';
import { createAgent } from 'langchain';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { createWorkmem as aiSdkWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { createWorkmem as langchainWorkmem } from '../../src/langchain/workmemMiddleware.js';
import type { Session } from '../../src/session/index.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { protocolFollower, type TestServer } from '../../src/testing/index.js';
import { logEntries, tempHome, testServers } from '../helpers.js';
import { agentTurn, client, proxies, sessionState } from '../serve/proxyHarness.js';

const serve = testServers();
const proxied = proxies();
/** The whole history in every request (phase 1 pinned): the model would see an old text if it were sent. */
const settings = { historyMode: 'phase1' as const };
const TURNS = [
  'Small talk alpha about the garden.',
  'My plant1 is rose1.',
  'Small talk beta about the weather.',
  'Small talk gamma about tea.',
];

/** Where each edit goes, as an index of the turns' user messages, and what it becomes. */
const EDITS = [
  { at: 0, text: 'Small talk ALPHA about the garden.', what: 'the first message, the same length' },
  { at: 2, text: 'Small talk beta, at length, about the weather and the rain.', what: 'a middle message, longer' },
  { at: 3, text: 'Small talk g.', what: 'the last message, shorter (regenerated)' },
] as const;

/** The user texts a request carries (the tail and the memory block left out). */
const userTexts = (server: TestServer, request = server.requests.at(-1)!): string[] =>
  request.body.messages.filter((m) => m.role === 'user').map((m) => String(m.content).split('\n\n<context_meta>')[0]!);

/** The session's history as it stands: its user messages, once each, the host's. */
const historyTexts = (session: Session): string[] =>
  session.history.items.slice(0, session.history.length).flatMap((i) => (i.message.role === 'user' ? [i.message.content] : []));

function expectFollowed(texts: string[], sent: string[], old: string, branches: number): void {
  expect(sent).toEqual(texts);
  expect(sent.join('\n')).not.toContain(old);
  expect(branches).toBe(1);
}

describe('an edit anywhere in a host’s history is followed', () => {
  it("through the proxy: a tool's result redacted in the middle, the same call", async () => {
    const { proxy, server, home } = await proxied({ proxy: { settings } });
    const openai = client(proxy, { 'x-workmem-session': 'redacted' });
    const messages: ChatCompletionMessageParam[] = [];
    for (const text of ['Use the weather tool with city1.', 'Small talk alpha.', 'Small talk beta.'])
      await agentTurn(openai, messages, text);
    const at = messages.findIndex((m) => m.role === 'tool');
    const old = String(messages[at]!.content);
    expect(old).toContain('Sunny in city1');
    messages[at] = { ...(messages[at] as { role: 'tool'; tool_call_id: string }), content: '[redacted]' };
    await agentTurn(openai, messages, 'Small talk gamma.');
    const sent = JSON.stringify(server.requests.at(-1)!.body.messages);
    expect(sent).toContain('[redacted]');
    expect(sent).not.toContain('Sunny in city1');
    const { log } = await sessionState(sessionIdFor('redacted'), { home });
    expect(log.filter((e) => e.type === 'branch')).toHaveLength(1);
  });

  for (const edit of EDITS) {
    it(`through the AI SDK middleware: ${edit.what}`, async () => {
      const server = await serve(protocolFollower({ seed: 1 }));
      const model = createOpenAICompatible({ name: 'test', baseURL: server.baseURL, includeUsage: true }).chatModel('gpt-4o');
      const workmem = await aiSdkWorkmem({ model, settings, home: tempHome(), cwd: '/work/project', env: {} });
      const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
      let messages: ModelMessage[] = [];
      const ask = async (): Promise<void> => {
        const result = await generateText({ model: wrapped, messages, tools: workmem.tools, stopWhen: stepCountIs(10) });
        messages = [...messages, ...result.response.messages];
      };
      for (const text of TURNS) {
        messages.push({ role: 'user', content: text });
        await ask();
      }
      // The host edits the user message in place (the same array slot, another text).
      const users = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
      const old = TURNS[edit.at]!;
      if (edit.at === TURNS.length - 1) messages = messages.slice(0, users[edit.at]! + 1);
      messages[users[edit.at]!] = { role: 'user', content: edit.text };
      if (edit.at !== TURNS.length - 1) messages.push({ role: 'user', content: 'Small talk delta.' });
      await ask();
      const texts = messages.flatMap((m) => (m.role === 'user' ? [m.content as string] : []));
      expectFollowed(texts, userTexts(server), old, logEntries(workmem.session.dir).filter((e) => e.type === 'branch').length);
      expect(historyTexts(workmem.session)).toEqual(texts);
      await workmem.close();
    });

    it(`through the LangChain middleware: ${edit.what}`, async () => {
      const server = await serve(protocolFollower({ seed: 1 }));
      const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', configuration: { baseURL: server.baseURL } });
      const workmem = await langchainWorkmem({ model, settings, home: tempHome(), cwd: '/work/project', env: {} });
      const agent = createAgent({ model, middleware: [workmem.middleware] });
      let messages: BaseMessage[] = [];
      for (const text of TURNS) messages = (await agent.invoke({ messages: [...messages, new HumanMessage(text)] })).messages;
      const users = messages.flatMap((m, i) => (HumanMessage.isInstance(m) ? [i] : []));
      const old = TURNS[edit.at]!;
      // A new state: the edited message a new object, as a host that edits its history makes it.
      let edited = messages.map((m, i) => (i === users[edit.at] ? new HumanMessage(edit.text) : m));
      if (edit.at === TURNS.length - 1) edited = edited.slice(0, users[edit.at]! + 1);
      else edited.push(new HumanMessage('Small talk delta.'));
      messages = (await agent.invoke({ messages: edited })).messages;
      expect(AIMessage.isInstance(messages.at(-1))).toBe(true);
      const texts = messages.flatMap((m) => (HumanMessage.isInstance(m) ? [m.text] : []));
      expectFollowed(texts, userTexts(server), old, logEntries(workmem.session.dir).filter((e) => e.type === 'branch').length);
      expect(historyTexts(workmem.session)).toEqual(texts);
      await workmem.close();
    });

    it(`through the proxy: ${edit.what}`, async () => {
      const { proxy, server, home } = await proxied({ proxy: { settings } });
      const openai = client(proxy, { 'x-workmem-session': 'edited' });
      let messages: ChatCompletionMessageParam[] = [];
      for (const text of TURNS) await agentTurn(openai, messages, text);
      const users = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
      const old = TURNS[edit.at]!;
      if (edit.at === TURNS.length - 1) {
        messages = messages.slice(0, users[edit.at]!);
        await agentTurn(openai, messages, edit.text);
      } else {
        messages[users[edit.at]!] = { role: 'user', content: edit.text };
        await agentTurn(openai, messages, 'Small talk delta.');
      }
      const texts = messages.flatMap((m) => (m.role === 'user' ? [m.content as string] : []));
      const { log } = await sessionState(sessionIdFor('edited'), { home });
      expectFollowed(texts, userTexts(server), old, log.filter((e) => e.type === 'branch').length);
    });
  }
});
