/**
 * The follow-up that phase 2 must not lose (issue 18): after the model's first real
 * memory write the session switches to phase 2, and the next question refers to the
 * previous answer. Through the test server, so the assertion is on what went over the wire.
 */
import { describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { reminderText } from '../../src/prompt/requestTail.js';
import { scripted, type ChatRequest } from '../../src/testing/index.js';
import { collect, newSession, ofType, testServers } from '../helpers.js';
import { storesUnderTest, type StoreUnderTest } from '../storage/stores.js';

const HAIKU = 'Maple leaves drifting\nacross the cold silver pond\nautumn breathes softly';
const MEMORY = '# Working Memory\n\n## Current task\n- Writing a haiku about autumn for the user.\n';
const text = (m: ChatRequest['messages'][number]) => (m.content ?? '').split('\n\n<context_meta>')[0];
const metaOf = (request: ChatRequest) =>
  JSON.parse(/<context_meta>\n(.*)\n<\/context_meta>/.exec(request.messages.at(-1)!.content ?? '')![1]!) as Record<string, number>;

/** Write the memory, answer with the haiku, then answer the follow-up from what the request carries. */
const policy = () =>
  scripted([
    { toolCalls: [{ name: 'write', arguments: JSON.stringify({ path: 'working-memory/overview.md', content: MEMORY }) }] },
    HAIKU,
    (request) =>
      request.messages.some((m) => m.role === 'assistant' && m.content === HAIKU)
        ? 'Maple leaves drifting\nacross the pond\nautumn breathes softly'
        : 'Which haiku?',
  ]);

const serve = testServers();

async function conversation(store: StoreUnderTest, settings: { recentTurns?: number }) {
  const server = await serve(policy());
  const session = await newSession({
    ...store.fresh(),
    llm: openaiChat({ baseURL: server.baseURL, model: 'workmem-test', env: {} }),
    settings,
  });
  const events = collect(session);
  await session.prompt('Write a haiku about autumn.');
  const answer = await session.prompt('now make the second line of that haiku shorter');
  await session.close();
  return { server, events, answer };
}

describe.each(storesUnderTest('follow-up'))('phase 2 keeps the last exchanges ($name store)', (store) => {
  it('the request after the switch to phase 2 carries the previous exchange (default recentTurns 3)', async () => {
    const { server, events, answer } = await conversation(store, {});
    expect(ofType(events, 'mode_changed').map((e) => `${e.from}->${e.to}`)).toEqual(['phase1->phase2']);
    expect(server.requests).toHaveLength(3);
    const followUp = server.requests[2]!.body.messages;
    expect(ofType(events, 'prompt_built').at(-1)!.mode).toBe('phase2');
    // system (with the memory), the whole first exchange with its tool call and result, then the follow-up.
    expect(followUp.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(followUp[0]!.content).toContain('Writing a haiku about autumn');
    expect(text(followUp[1]!)).toBe('Write a haiku about autumn.');
    expect(followUp[4]!.content).toBe(HAIKU);
    expect(text(followUp[5]!)).toBe('now make the second line of that haiku shorter');
    expect(answer.text).toContain('across the pond');
    // context_meta tells the model what is stored and what of it this request carries.
    expect(metaOf(server.requests[2]!.body)).toMatchObject({ messages_in_history: 5, messages_sent: 5 });
  });

  it('recentTurns 0 is the strict view: memory and the active turn only', async () => {
    const { server, answer } = await conversation(store, { recentTurns: 0 });
    const followUp = server.requests[2]!.body.messages;
    expect(followUp.map((m) => m.role)).toEqual(['system', 'user']);
    expect(answer.text).toBe('Which haiku?');
    expect(metaOf(server.requests[2]!.body)).toMatchObject({ messages_in_history: 5, messages_sent: 1 });
    expect(server.requests[2]!.body.messages[0]!.content).toMatch(/messages_sent \(how many of them this request carries/);
  });
});

describe('messages_sent', () => {
  it('the reminder names what is stored and what this request carries, in both languages', () => {
    const meta = {
      tokens_used: 7000,
      tokens_max: 10_000,
      tokens_percent: 70,
      messages_in_history: 40,
      messages_sent: 9,
      working_memory_size: 900,
    };
    const due = { level: 'gentle', reason: 'rounds', rounds: 6, tokensPercent: 70 } as const;
    expect(reminderText(due, meta, 'en')).toContain('- Messages in history: 40 (9 sent in this request)');
    expect(reminderText(due, meta, 'zh')).toContain('- 历史消息: 40 条 (本次请求发送 9 条)');
  });
});
