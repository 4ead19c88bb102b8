/**
 * The LangChain door on its own: createAgent with workmem's middleware and ChatOpenAI
 * against the test server. The agent's state stays its own; the server's usage (cache reads
 * included) is recorded; an overflow is compacted and the call made again; any other
 * failure reaches the agent and leaves the session usable; a compaction summary made during
 * a streamed call never reaches the agent's stream; /context shows the session, live and
 * reopened as `workmem chat --session` opens it. The conversion of LangChain messages.
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, tool } from 'langchain';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ContextWatch, renderContext } from '../../src/cli/contextView.js';
import { createWorkmem } from '../../src/langchain/workmemMiddleware.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { openSession } from '../../src/session/index.js';
import { conversationOf, messageOf, requestMessagesOf, responseOf, type RequestMessages } from '../../src/langchain/langchainMessages.js';
import { ConversionsByPlace } from '../../src/llm/conversionsByPlace.js';
import { protocolFollower, scripted, type TestServer } from '../../src/testing/index.js';
import { collect, ofType, tempHome, testServers } from '../helpers.js';
import { SUMMARIZER_MARK } from '../../src/compaction/summarizer.js';

const serve = testServers();

async function agentOn(server: TestServer, window = 32_000, home = tempHome(), background = true) {
  const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', configuration: { baseURL: server.baseURL } });
  const settings = { reserveOutputTokens: 500, ...(background ? {} : { backgroundThreshold: false as const }) };
  const workmem = await createWorkmem({ model, contextWindow: window, settings, home, cwd: '/work/project', env: {} });
  const agent = createAgent({ model, middleware: [workmem.middleware], systemPrompt: 'Be brief.' });
  return { workmem, agent, events: collect(workmem.session) };
}

describe('createAgent with the workmem middleware', () => {
  it("sends workmem's request, keeps the agent's own messages, and records the server's usage with its cache reads", async () => {
    const server = await serve(protocolFollower({ seed: 1 }), { promptCaching: 'automatic' });
    const { workmem, agent, events } = await agentOn(server);
    let messages: BaseMessage[] = [];
    for (const text of ['My name is Ada.', 'What is my name?']) {
      messages = (await agent.invoke({ messages: [...messages, new HumanMessage(text)] })).messages;
    }
    // The agent holds its own conversation: its messages, the answers, no <context_meta>, no memory block.
    expect(messages.map((m) => m.type)).toEqual(['human', 'ai', 'tool', 'ai', 'human', 'ai']);
    expect(messages.some((m) => m.text.includes('<context_meta>'))).toBe(false);
    // The server got workmem's: its system prompt after the agent's, the memory, the tail.
    const first = server.requests[0]!.body;
    expect(first.messages[0]!.content).toMatch(/^Be brief\.\n\n## Working memory/);
    expect(first.messages.at(-1)!.content).toMatch(/^My name is Ada\.\n\n<context_meta>/);
    expect(first.tools?.map((t) => t.function.name)).toEqual(['read', 'write', 'edit', 'compact_history']);
    expect(messages.at(-1)!.text).toMatch(/Ada/);
    expect(workmem.session.memory()).toMatch(/Ada/);

    const usage = ofType(events, 'turn_end').map((e) => e.usage);
    const reported = server.requests.map((r) => ({ input: r.promptTokens, cached: r.cachedTokens }));
    expect(
      reported.some((r) => r.cached > 0),
      'the server served some of the prompt from its cache',
    ).toBe(true);
    expect(usage).toHaveLength(2);
    const input = usage.reduce((n, u) => n + u!.input, 0);
    const cached = usage.reduce((n, u) => n + u!.cached, 0);
    expect([input, cached]).toEqual([reported.reduce((n, r) => n + r.input, 0), reported.reduce((n, r) => n + r.cached, 0)]);
    await workmem.close();
  });

  it("tells the model of a tool of the agent's that throws, as without workmem: the run goes on", async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', configuration: { baseURL: server.baseURL } });
    const workmem = await createWorkmem({ model, home: tempHome(), cwd: '/work/project', env: {} });
    const boom = tool(
      async () => {
        throw new Error('the disk is gone');
      },
      { name: 'boom', description: 'Fails', schema: z.object({ input: z.string() }) },
    );
    const agent = createAgent({ model, tools: [boom], middleware: [workmem.middleware] });
    const { messages } = await agent.invoke({ messages: [new HumanMessage('Use the boom tool with now.')] });
    const failed = messages.find((m) => ToolMessage.isInstance(m))!;
    expect(failed.text).toContain('the disk is gone');
    expect((failed as ToolMessage).status).toBe('error');
    expect(messages.at(-1)!.type).toBe('ai');
    await workmem.close();
  });

  it('compacts an overflow once and makes the call again; any other failure reaches the agent', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const { workmem, agent, events } = await agentOn(server);
    await agent.invoke({ messages: [new HumanMessage('First question.')] });
    const before = server.requests.length;
    server.inject({ type: 'context_length' });
    const state = await agent.invoke({ messages: [new HumanMessage('First question.'), new AIMessage('OK.'), new HumanMessage('Again.')] });
    expect(state.messages.at(-1)!.type).toBe('ai');
    expect(server.requests.length - before, 'the refused call and the one made again').toBe(2);
    expect(ofType(events, 'compaction_start').map((e) => e.reason)).toContain('overflow');

    // A 400 (LangChain's own client retries a 500 itself).
    server.inject({ type: 'server_error', status: 400, message: 'the request is malformed' });
    const failed = agent.invoke({ messages: [new HumanMessage('A third question.')] });
    await expect(failed).rejects.toThrow(/the request is malformed/);
    // The session goes on: the next call is prepared and answered.
    const after = await agent.invoke({ messages: [new HumanMessage('A fourth question.')] });
    expect(after.messages.at(-1)!.type).toBe('ai');
    await workmem.close();
  });

  it("makes a compaction summary outside the agent's stream", async () => {
    // A small window: the second call passes 75 %, and the fallback summarises the first turn.
    const long = `${'Background material, line by line. '.repeat(150)}`;
    const server = await serve(scripted([{ content: 'Noted.' }, { content: 'Summary of the turn.' }, { content: 'Done.' }]));
    // The fallback's own summary, asked for during the call (the background's is the next test's).
    const { workmem, agent } = await agentOn(server, 3000, tempHome(), false);
    const first = await agent.invoke({ messages: [new HumanMessage(long)] });
    const streamed: string[] = [];
    for await (const [chunk] of await agent.stream(
      { messages: [...first.messages, new HumanMessage('And now?')] },
      { streamMode: 'messages' },
    ))
      if (chunk.type === 'ai' || chunk.type === 'AIMessageChunk') streamed.push(chunk.text);
    expect(server.requests.length).toBe(3);
    expect(server.requests[1]!.body.stream, 'the summary, asked for whole').toBe(false);
    expect(streamed.join('')).toBe('Done.');
    await workmem.close();
  });

  it("lets what workmem archived leave the agent's state, as LangChain's summarization does, and loses nothing", async () => {
    const long = `${'Background material, line by line. '.repeat(150)}`;
    const replies = [{ content: 'Noted.' }, { content: 'Summary of the turn.' }, { content: 'Done.' }, { content: 'Still here.' }];
    const server = await serve(scripted(replies));
    // The fallback's own summary, in the script's order (the background's is the next test's).
    const { workmem, agent, events } = await agentOn(server, 3000, tempHome(), false);
    const first = await agent.invoke({ messages: [new HumanMessage(long)] });
    expect(first.messages.map((m) => m.text)).toEqual([long, 'Noted.']);
    const second = await agent.invoke({ messages: [...first.messages, new HumanMessage('And now?')] });
    expect(ofType(events, 'compaction_end').filter((e) => e.replaced > 0)).toHaveLength(1);
    // The fallback archived the first turn: it left the agent's state.
    expect(second.messages.map((m) => m.text)).toEqual(['And now?', 'Done.']);
    // What the agent holds is the end of the session's conversation: matched as it is, no branch taken.
    const third = await agent.invoke({ messages: [...second.messages, new HumanMessage('And then?')] });
    expect(third.messages.map((m) => m.text)).toEqual(['And now?', 'Done.', 'And then?', 'Still here.']);
    const log = (await workmem.session.record.storage.log.read()).entries;
    expect(log.some((e) => e.type === 'branch')).toBe(false);
    expect(log.flatMap((e) => (e.type === 'message' ? [e.message.content] : []))).toEqual([
      long,
      'Noted.',
      'And now?',
      'Done.',
      'And then?',
      'Still here.',
    ]);
    await workmem.close();
  });
});

describe('background compaction through the middleware', () => {
  it("the agent's calls never wait for a summary started earlier; the fallback swaps it in once it is ready", async () => {
    // The summarizer answers only when the test lets it: until then every summary request hangs.
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let summaryRequests = 0;
    const summary = '## Goal\n- talk\n\n## Decisions\n- none\n\n## Progress\n- done\n\n## Open items\n- none\n\n## Key facts\n- none';
    const server = await serve(async (body) => {
      if (!String(body.messages[0]?.content ?? '').includes(SUMMARIZER_MARK))
        return { content: `Noted. ${'A reply of some length. '.repeat(20)}` };
      summaryRequests++;
      await released;
      return { content: summary };
    });
    const { workmem, agent, events } = await agentOn(server, 6_000);
    let messages: BaseMessage[] = [];
    const call = async (t: number) => {
      messages = (await agent.invoke({ messages: [...messages, new HumanMessage(`Question ${t}: ${'some context '.repeat(30)}`)] }))
        .messages;
    };
    let t = 0;
    while (ofType(events, 'background_start').length === 0) await call(++t);
    // The summary hangs, and the agent's calls go on and are answered.
    const answered = server.requests.filter((r) => r.status === 200).length;
    for (let i = 0; i < 2; i++) await call(++t);
    expect(summaryRequests).toBe(1);
    expect(ofType(events, 'background_end')).toEqual([]);
    expect(server.requests.length - answered).toBeGreaterThanOrEqual(2);
    release();
    while (ofType(events, 'background_end').length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(ofType(events, 'background_end')[0]).toMatchObject({ status: 'ready' });
    while (ofType(events, 'compaction_end').length === 0) await call(++t);
    expect(ofType(events, 'compaction_end')[0]).toMatchObject({ reason: 'background' });
    expect(summaryRequests, 'the fallback asked for no summary of its own').toBe(1);
    // What the swap archived left the agent's state; the log holds every question.
    const log = (await workmem.session.record.storage.log.read()).entries;
    expect(log.filter((e) => e.type === 'message' && e.message.role === 'user')).toHaveLength(t);
    const held = messages.filter((m) => m.type === 'human');
    expect(held.length).toBeLessThan(t);
    expect(held.at(-1)!.text).toContain(`Question ${t}:`);
    await workmem.close();
  });
});

describe('the session named by sessionId', () => {
  it('is created in a home that holds other sessions, and opened by the same name afterwards', async () => {
    const home = tempHome();
    const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test' });
    const options = { model, home, cwd: '/work/project', env: {}, settings: { reserveOutputTokens: 500 } };
    const other = await createWorkmem(options);
    await other.close();
    const named = await createWorkmem({ ...options, sessionId: 'support-42' });
    const id = named.session.id;
    expect(id).not.toBe(other.session.id);
    await named.close();
    const again = await createWorkmem({ ...options, sessionId: 'support-42' });
    expect(again.session.id).toBe(id);
    await again.close();
  });
});

describe('/context of a middleware-driven session', () => {
  it("shows the agent's last request as its prompt_built said, and the next one once the session is reopened", async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const home = tempHome();
    const { workmem, agent, events } = await agentOn(server, 32_000, home);
    const watch = new ContextWatch(workmem.session);
    await agent.invoke({ messages: [new HumanMessage('My name is Ada.')] });
    const built = ofType(events, 'prompt_built').at(-1)!;
    const last = await watch.breakdown();
    expect([last.estimate, last.turn, last.request, last.counted]).toEqual([false, built.turn, built.request, built.tokens.counted]);
    expect(renderContext(last)).toMatch(/^Context of the last request: turn 1, request 2 · phase2/);
    watch.close();
    const id = workmem.session.id;
    await workmem.close();

    // As `workmem chat --session <id>` opens it: the history the agent built, the next request estimated.
    const reopened = await openSession(id, { llm: scriptedModel([]), home, env: {} });
    const next = await new ContextWatch(reopened).breakdown();
    expect([next.estimate, next.turn, next.history.length]).toEqual([true, 2, reopened.history.length]);
    expect(next.history.length).toBe(4);
    expect(renderContext(next)).toMatch(/^Context of the next request \(an estimate before your message: turn 2\)/);
    await reopened.close();
  });
});

describe('LangChain messages in workmem words', () => {
  it('reads text, names attachments, keeps tool calls (unparsed ones as written) and usage with cache reads', () => {
    const human = new HumanMessage({
      content: [
        { type: 'text', text: 'Look: ' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
      ],
    });
    expect(messageOf(human)).toEqual({ role: 'user', content: 'Look: [a image/png attachment: not kept by workmem]' });
    const ai = new AIMessage({
      content: '',
      tool_calls: [{ id: 'c1', name: 'write', args: { path: 'p' } }],
      invalid_tool_calls: [{ id: 'c2', name: 'edit', args: '{"path":', error: 'bad', type: 'invalid_tool_call' }],
      usage_metadata: { input_tokens: 50, output_tokens: 7, total_tokens: 57, input_token_details: { cache_read: 32 } },
    });
    expect(responseOf(ai)).toEqual({
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'write', arguments: '{"path":"p"}' } },
          { id: 'c2', type: 'function', function: { name: 'edit', arguments: '{"path":' } },
        ],
      },
      usage: { promptTokens: 50, completionTokens: 7, cachedPromptTokens: 32 },
      finishReason: 'tool_calls',
    });
    expect(messageOf(new ToolMessage({ content: 'ok', tool_call_id: 'c1' }))).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'ok' });
    const { instructions, conversation } = conversationOf(new SystemMessage({ content: [{ type: 'text', text: 'Rules.' }] }), [human]);
    expect([instructions, conversation.length, conversation.at(0).role]).toEqual(['Rules.', 1, 'user']);
  });

  it("workmem's request as LangChain messages: the system message apart, arguments parsed, round trip intact", () => {
    const request = [
      { role: 'system' as const, content: 'System.' },
      { role: 'user' as const, content: 'Hi' },
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'write', arguments: '{"path":"p","content":"x"}' } }],
      },
      { role: 'tool' as const, tool_call_id: 'c1', content: 'Wrote.' },
      { role: 'assistant' as const, content: 'Done.' },
    ];
    const { system, messages } = requestMessagesOf(request);
    expect(system.content).toBe('System.');
    expect((messages[1] as AIMessage).tool_calls?.[0]?.args).toEqual({ path: 'p', content: 'x' });
    expect([system, ...messages].map(messageOf)).toEqual(request);
  });

  it("one session's requests, converted by place from the last: the same messages as converted afresh, whatever the model did to the last", () => {
    const history: ChatMessage[] = Array.from({ length: 300 }, (_, i) =>
      i % 2 ? { role: 'assistant', content: `Answer ${i}` } : { role: 'user', content: `Question ${i}` },
    );
    const requests: ChatMessage[][] = [
      [{ role: 'system', content: 'Memory 1' }, ...history.slice(0, 200), { role: 'user', content: 'Q 1 + tail' }],
      // The next call: the same history objects, one more turn, a new tail.
      [{ role: 'system', content: 'Memory 1' }, ...history.slice(0, 202), { role: 'user', content: 'Q 2 + tail' }],
      // After a compaction: a note where the first 150 were, the rest moved up.
      [
        { role: 'system', content: 'Memory 2' },
        { role: 'user', content: '[compacted]' },
        ...history.slice(150, 204),
        { role: 'user', content: 'Q 3' },
      ],
      // Without a system message, and a message replaced in place.
      [...history.slice(150, 180), { role: 'assistant', content: 'Replaced' }, ...history.slice(181, 206)],
    ];
    const converter: RequestMessages = new ConversionsByPlace();
    for (const request of requests) {
      const made = requestMessagesOf(request, converter);
      const fresh = requestMessagesOf(request);
      expect(made.system.content).toBe(fresh.system.content);
      expect(made.messages.map(messageOf)).toEqual(fresh.messages.map(messageOf));
      expect(made.messages.map(messageOf)).toEqual(request.filter((m) => m.role !== 'system'));
      // What the agent's model does to the array it was handed is not the next call's business.
      made.messages.reverse();
      made.messages.length = 3;
    }
  });
});
