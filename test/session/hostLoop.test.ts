/**
 * A host's own loop through the HostLoop core gets, request for request, what a workmem
 * Session sends for the same conversation: the same model (a protocol follower in
 * process), the same host tool, the same memory writes and compactions — and the same
 * pinned messages: rules pinned when the session is created, a task statement pinned in
 * the conversation (prompt(text, { pin: true }) in one, a message marked pinned in the other).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AssistantMessage, ChatMessage, ToolCall } from '../../src/history/messages.js';
import { shapeOf } from '../../src/history/hostLine.js';
import type { LLMRequest } from '../../src/llm/llm.js';
import { HostLoop, type HostMessage } from '../../src/session/hostLoop.js';
import { defineTool } from '../../src/tools/tool.js';
import { policyModel, protocolFollower } from '../../src/testing/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { collect, newSession, ofType, tempHome } from '../helpers.js';

const INSTRUCTIONS = 'You help with a garden.';
const RULES = 'Rules: metric units only; never recommend pesticides.';
const TASK = 'Task: keep track of my plants and answer questions about them.';
const WINDOW = 6000;
/** One clock for both: archive names carry the time. */
const now = (): number => Date.UTC(2026, 10, 25, 12);

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ input: z.string() }),
  execute: async ({ input }) => `Sunny in ${input}. ${'Long forecast text. '.repeat(40)}`,
});

/** The conversation: facts early, a host tool, questions late. */
function prompts(): string[] {
  const out: string[] = [TASK];
  for (let i = 1; i <= 10; i++) out.push(`My plant${i} is rose${i}.`);
  for (let i = 1; i <= 6; i++) out.push(`Use the weather tool with city${i}.`);
  for (let i = 1; i <= 8; i++) out.push(`Small talk number ${i}: ${'the weather is mild, '.repeat(10)}`);
  for (let i = 1; i <= 10; i++) out.push(`What is my plant${i}?`);
  return out;
}

describe('a host loop through HostLoop', () => {
  it('sends the same requests as a Session for the same conversation, and answers the same', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const settings = { contextWindow: WINDOW, reserveOutputTokens: 500 };

    // workmem's own loop.
    const own: LLMRequest[] = [];
    const ownModel = policyModel(protocolFollower({ seed: 2 }), { counter, contextWindow: WINDOW });
    const complete = ownModel.complete.bind(ownModel);
    ownModel.complete = (request, options) => {
      own.push(structuredClone(request));
      return complete(request, options);
    };
    const session = await newSession({ llm: ownModel, instructions: INSTRUCTIONS, tools: [weather], settings, now, pinned: [RULES] });
    const ownEvents = collect(session);
    const ownAnswers: string[] = [];
    for (const text of prompts()) ownAnswers.push((await session.prompt(text, { pin: text === TASK })).text);
    const ownMemory = session.memory();
    await session.close();

    // A host's loop: it keeps the messages, calls the model with what workmem prepares, runs its own tool.
    const hosted: LLMRequest[] = [];
    const hostModel = policyModel(protocolFollower({ seed: 2 }), { counter, contextWindow: WINDOW });
    const loop = await HostLoop.open({
      model: 'gpt-4o',
      contextWindow: WINDOW,
      settings,
      home: tempHome(),
      cwd: '/work/project',
      env: {},
      now,
      pinned: [RULES],
    });
    const hostEvents = collect(loop.session);
    // The host's own tools: workmem's are named beside them and sent first.
    const tools = [weather.spec];
    const messages: HostMessage[] = [{ role: 'system', content: INSTRUCTIONS }];
    const hostAnswers: string[] = [];
    for (const text of prompts()) {
      messages.push({ role: 'user', content: text, ...(text === TASK ? { pinned: true } : {}) });
      for (;;) {
        const call = await loop.prepare({ messages, tools });
        hosted.push(structuredClone(call.request));
        const response = await hostModel.complete(call.request, { signal: new AbortController().signal, onText: call.text });
        await call.answer(response);
        messages.push(response.message);
        const calls: ToolCall[] = response.message.role === 'assistant' ? (response.message.tool_calls ?? []) : [];
        if (!calls.length) {
          hostAnswers.push(response.message.content ?? '');
          break;
        }
        for (const c of calls) {
          const content = loop.isOwnTool(c.function.name)
            ? (await loop.runTools([c]))[0]!.content
            : String(await weather.execute(JSON.parse(c.function.arguments), {} as never));
          messages.push({ role: 'tool', tool_call_id: c.id, content });
        }
      }
    }
    const hostMemory = loop.session.memory();
    await loop.close();

    expect(hosted.length).toBe(own.length);
    for (const [i, request] of hosted.entries()) expect(request, `request ${i + 1}`).toEqual(own[i]);
    expect(hostAnswers).toEqual(ownAnswers);
    expect(hostMemory).toBe(ownMemory);
    // The conversation did what it is for: memory written, history compacted, phase 2 reached, late facts answered.
    for (const events of [ownEvents, hostEvents]) {
      expect(ofType(events, 'memory_updated').length).toBeGreaterThan(0);
      expect(ofType(events, 'compaction_end').filter((e) => e.replaced > 0).length).toBeGreaterThan(0);
      expect(ofType(events, 'mode_changed').some((e) => e.to === 'phase2')).toBe(true);
    }
    expect(hostAnswers.slice(-10).filter((a) => /rose\d+/.test(a)).length).toBeGreaterThanOrEqual(8);
    // The pins went with every request, first after the system message once phase 2 carried only recent turns.
    for (const request of hosted) {
      expect(request.messages.filter((m) => m.content === RULES)).toHaveLength(1);
      expect(request.messages.some((m) => m.content?.startsWith(TASK))).toBe(true);
    }
    const late = ofType(hostEvents, 'prompt_built').filter((e) => e.mode === 'phase2');
    expect(late.length).toBeGreaterThan(0);
    for (const e of late) expect(e.pinned?.length, `request ${e.turn}.${e.request}`).toBe(2);
    expect(
      hosted
        .at(-1)!
        .messages.slice(1, 3)
        .map((m) => m.content),
    ).toEqual([RULES, TASK]);
  });

  it('takes its system messages, wherever they are, as the instructions, and the rest in order', async () => {
    const loop = await HostLoop.open({ model: 'gpt-4o', contextWindow: WINDOW, home: tempHome(), cwd: '/work/project', env: {}, now });
    const messages: HostMessage[] = [
      { role: 'system', content: 'Rule A.' },
      { role: 'user', content: 'First question.' },
      { role: 'assistant', content: 'First answer.' },
      { role: 'system', content: 'Rule B.' },
      { role: 'user', content: 'Second question.' },
    ];
    await expect(loop.prepare({ messages: messages.map((m, i) => (i === 3 ? { ...m, pinned: true } : m)), tools: [] })).rejects.toThrow(
      /only a user message can be pinned/,
    );
    const call = await loop.prepare({ messages, tools: [] });
    const [system, ...rest] = call.request.messages;
    expect(system!.content).toContain('Rule A.\n\nRule B.');
    expect(rest.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(rest.map((m) => m.content)).toEqual(['First question.', 'First answer.', expect.stringContaining('Second question.')]);
    await call.answer({ message: { role: 'assistant', content: 'Second answer.' }, usage: null, finishReason: 'stop' });
    await loop.close();
  });

  it('folds a call again from scratch after a call whose conversation could not be read, however many objects it shares', async () => {
    const loop = await HostLoop.open({ model: 'gpt-4o', contextWindow: WINDOW, home: tempHome(), cwd: '/work/project', env: {}, now });
    const list: ChatMessage[] = [{ role: 'user', content: 'hello' }];
    /** The host's conversation, its own objects; reading the message at `refused` fails, as a message of a kind workmem cannot take does. */
    const conversation = (length: number, refused = -1) => ({
      instructions: undefined,
      tools: [],
      conversation: {
        length,
        at: (i: number) => list[i]!,
        shape: (i: number) => {
          if (i === refused) throw new TypeError('a function message has no place in a chat history');
          return shapeOf(list[i]!);
        },
        objects: { list, from: 0 },
      },
    });
    const first = await loop.prepare(conversation(1));
    const reading: ChatMessage = {
      role: 'assistant',
      content: 'Reading.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"overview.md"}' } }],
    };
    await first.answer({ message: reading as AssistantMessage, usage: null, finishReason: 'tool_calls' });
    const [result] = await loop.runTools(reading.role === 'assistant' ? reading.tool_calls! : []);
    list.push(reading, { role: 'tool', tool_call_id: 'c1', content: result!.content }, { role: 'user', content: 'refused' });
    await expect(loop.prepare(conversation(4, 3))).rejects.toThrow(/no place in a chat history/);
    const again = await loop.prepare(conversation(3));
    // The log holds the question once: nothing of the conversation was taken for new.
    expect(again.request.messages.filter((m) => m.role === 'user' && m.content.startsWith('hello'))).toHaveLength(1);
    await again.answer({ message: { role: 'assistant', content: 'Done.' }, usage: null, finishReason: 'stop' });
    await loop.close();
  });
});
