import { afterEach, describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { protocolFollower, startTestServer, statedFacts, type ChatRequest, type TestServer } from '../../src/testing/index.js';
import { collect, newSession, ofType } from '../helpers.js';

const TOOLS = ['read', 'write', 'edit', 'compact_history'].map((name) => ({ type: 'function' as const, function: { name } }));

function request(memory: string, messages: ChatRequest['messages'], tail = ''): ChatRequest {
  const system = {
    role: 'system' as const,
    content: `rules\n\n<working_memory file="working-memory/overview.md">\n${memory}\n</working_memory>`,
  };
  const last = messages.at(-1)!;
  const withTail = { ...last, content: `${last.content}${tail}` } as ChatRequest['messages'][number];
  return { model: 'm', messages: [system, ...messages.slice(0, -1), withTail], tools: TOOLS };
}
const meta = (percent: number, reminder = false) =>
  `\n\n<context_meta>\n${JSON.stringify({ tokens_used: percent * 100, tokens_max: 10_000, tokens_percent: percent, messages_in_history: 4, working_memory_size: 100 })}\n</context_meta>` +
  (reminder ? '\n\n<memory_reminder level="gentle">\nupdate\n</memory_reminder>' : '');

describe('protocolFollower, rule by rule', () => {
  it('parses facts and questions in English and Chinese', () => {
    expect(statedFacts('Hi. My name is Ada. The project codename is Falcon! What is my dog?')).toEqual([
      { key: 'name', value: 'Ada', zh: false },
      { key: 'project codename', value: 'Falcon', zh: false },
    ]);
    expect(statedFacts('我的城市是杭州。我的猫是什么？')).toEqual([{ key: '城市', value: '杭州', zh: true }]);
  });

  it('records stated facts with write, answers from memory, says it does not know otherwise', async () => {
    const follower = protocolFollower({ seed: 1, forgetfulness: 0 });
    const stated = await follower(request('# Working Memory', [{ role: 'user', content: 'My name is Ada.' }], meta(5)), { index: 0 });
    expect(stated.toolCalls).toHaveLength(1);
    const args = JSON.parse(stated.toolCalls![0]!.arguments);
    expect(args.path).toBe('working-memory/overview.md');
    expect(args.content).toContain('- name: Ada');

    const asked = await follower(
      request('## Known facts\n- name: Ada', [{ role: 'user', content: 'What is my name? And what is my dog?' }], meta(5)),
      { index: 1 },
    );
    expect(asked).toEqual({ content: "Your name is Ada. I don't know your dog." });
    const zh = await follower(request('## Known facts\n- 城市: 杭州', [{ role: 'user', content: '我的城市是什么？' }], meta(5)), {
      index: 2,
    });
    expect(zh.content).toBe('你的城市是杭州。');
  });

  it('after its tool results it answers, using only the request', async () => {
    const follower = protocolFollower();
    const reply = await follower(
      request(
        '- name: Ada',
        [
          { role: 'user', content: 'My name is Ada. What is my name?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'write', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c', content: 'Wrote.' },
        ],
        meta(5),
      ),
      { index: 0 },
    );
    expect(reply.content).toBe('Your name is Ada. Noted: your name is Ada.');
  });

  it('forgets with the given probability, deterministically, and always updates when reminded', async () => {
    const forgetful = protocolFollower({ seed: 3, forgetfulness: 1 });
    const plain = request('', [{ role: 'user', content: 'My city is Lyon.' }], meta(5));
    expect((await forgetful(plain, { index: 0 })).toolCalls).toBeUndefined();
    const reminded = await forgetful(request('', [{ role: 'user', content: 'My city is Lyon.' }], meta(5, true)), { index: 1 });
    expect(reminded.toolCalls![0]!.name).toBe('write');
    // Reminded, it writes down every fact it can still see, also from earlier turns.
    const history = request(
      '',
      [
        { role: 'user', content: 'My pet is a cat.' },
        { role: 'assistant', content: 'Noted.' },
        { role: 'user', content: 'Hello.' },
      ],
      meta(5, true),
    );
    expect(JSON.parse((await forgetful(history, { index: 2 })).toolCalls![0]!.arguments).content).toContain('- pet: a cat');
    // Half-forgetful: the same request always gets the same answer; over many, about half are recorded.
    const half = protocolFollower({ seed: 9, forgetfulness: 0.5 });
    const first = await half(plain, { index: 0 });
    expect(await half(plain, { index: 1 })).toEqual(first);
    let recorded = 0;
    for (let i = 0; i < 400; i++)
      if ((await half(request('', [{ role: 'user', content: `My item ${i} is x${i}.` }], meta(5)), { index: i })).toolCalls) recorded++;
    expect(recorded).toBeGreaterThan(160);
    expect(recorded).toBeLessThan(240);
  });

  it('calls compact_history at the compression guide thresholds when it is offered', async () => {
    const follower = protocolFollower();
    const at = async (percent: number, tools = TOOLS) => {
      const r = request('', [{ role: 'user', content: 'Go on.' }], meta(percent));
      return (await follower({ ...r, tools }, { index: 0 })).toolCalls?.map((c) => [c.name, JSON.parse(c.arguments).target]);
    };
    expect(await at(10)).toBeUndefined();
    expect(await at(45)).toEqual([['compact_history', 'conversation']]);
    expect(await at(65)).toEqual([['compact_history', 'all']]);
    expect(await at(65, TOOLS.slice(0, 3))).toBeUndefined();
  });
});

describe('protocolFollower over HTTP', () => {
  let server: TestServer | undefined;
  afterEach(async () => server?.close());

  it('a 50-turn session reaches phase 2 and still answers questions about facts stated in turn 1', async () => {
    server = await startTestServer({ policy: protocolFollower({ seed: 42, forgetfulness: 0.3 }) });
    const llm = openaiChat({ baseURL: server.baseURL, model: 'workmem-test', contextWindow: 64_000, env: {} });
    const session = await newSession({ llm });
    const events = collect(session);
    const turns = [
      'Hello! My name is Ada and my project is a compiler. My favourite language is OCaml.',
      ...Array.from({ length: 47 }, (_, i) =>
        i % 7 === 3 ? `By the way, my lucky number ${i} is ${i * 7}.` : `Let us discuss topic ${i}: parsing, types and codegen.`,
      ),
      'What is my name?',
      'What is my favourite language?',
    ];
    const answers: string[] = [];
    for (const text of turns) {
      const result = await session.prompt(text);
      expect(result.status).toBe('done');
      answers.push(result.text);
    }
    expect(turns).toHaveLength(50);
    expect(ofType(events, 'mode_changed').map((e) => e.to)).toContain('phase2');
    expect(session.state.mode).toBe('phase2');
    expect(answers.at(-2)).toBe('Your name is Ada.');
    expect(answers.at(-1)).toBe('Your favourite language is OCaml.');
    // The answers came from memory: the last request carried no turn-1 message.
    const last = server.requests.at(-1)!.body;
    expect(last.messages.some((m) => m.role === 'user' && m.content!.includes('My name is Ada'))).toBe(false);
    expect(last.messages[0]!.content).toContain('- name: Ada');
    await session.close();
  });
});
