import { describe, expect, it } from 'vitest';
import { overviewTemplate } from '../../src/memory/memoryTemplate.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { openSession } from '../../src/session/index.js';
import type { LLMRequest } from '../../src/llm/llm.js';
import { collect, newSession, ofType } from '../helpers.js';
import { storesUnderTest } from '../storage/stores.js';

const write = (content: string): ScriptedReply => ({
  toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content } }],
});
const REAL = '# Working Memory\n\n## Known facts\n- The user is Ada; the project is a compiler in OCaml.\n';
const userTexts = (r: LLMRequest) => r.messages.filter((m) => m.role === 'user').map((m) => m.content!.split('\n\n<context_meta>')[0]);

describe.each(storesUnderTest('phase switching'))('history modes ($name store)', (store) => {
  it('template-only memory stays in phase 1, even when the model writes the template back', async () => {
    const llm = scriptedModel([{ text: 'a' }, write(overviewTemplate('en')), { text: 'b' }, { text: 'c' }]);
    const session = await newSession({ ...store.fresh(), llm });
    const events = collect(session);
    await session.prompt('one');
    await session.prompt('two');
    await session.prompt('three');
    expect(ofType(events, 'memory_updated')).toHaveLength(1);
    expect(ofType(events, 'mode_changed')).toHaveLength(0);
    expect(session.state.mode).toBe('phase1');
    expect(userTexts(llm.requests.at(-1)!)).toEqual(['one', 'two', 'three']);
    await session.close();
  });

  // recentTurns 0 (phase 2's strict view) where a test tells phase 2 from phase 1 by the
  // old turns it leaves out; the default (3 recent turns) is test/memory/followUp.test.ts's.
  it('a real write switches to phase 2: with recentTurns 0 the next request carries the memory and the active turn only', async () => {
    const llm = scriptedModel([{ text: 'hello' }, write(REAL), { text: 'noted' }, { text: 'Ada' }]);
    const session = await newSession({ ...store.fresh(), llm, settings: { recentTurns: 0 } });
    const events = collect(session);
    await session.prompt('Hi there.');
    await session.prompt('I am Ada and I write a compiler in OCaml.');
    expect(ofType(events, 'mode_changed')).toEqual([expect.objectContaining({ from: 'phase1', to: 'phase2', pinned: false })]);
    // The request right after the write, in the same turn: no old turn, only this one.
    const afterWrite = llm.requests[2]!;
    expect(userTexts(afterWrite)).toEqual(['I am Ada and I write a compiler in OCaml.']);
    expect(afterWrite.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(afterWrite.messages[0]!.content).toContain('The user is Ada');
    // The next turn: system + its own user message only.
    await session.prompt('What is my name?');
    const next = llm.requests[3]!;
    expect(next.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(userTexts(next)).toEqual(['What is my name?']);
    expect(ofType(events, 'prompt_built').at(-1)!.mode).toBe('phase2');
    await session.close();
  });

  it('emptying the memory falls back to hybrid: memory + the last N messages', async () => {
    const llm = scriptedModel([
      write(REAL),
      { text: 'ok' },
      { text: 'ok' },
      { text: 'ok' },
      write('# Working Memory\n'),
      { text: 'emptied' },
      { text: 'ok' },
    ]);
    const session = await newSession({ ...store.fresh(), llm, settings: { hybridRecent: 4 } });
    const events = collect(session);
    for (const text of ['one', 'two', 'three', 'four', 'five']) await session.prompt(text);
    expect(ofType(events, 'mode_changed').map((e) => `${e.from}->${e.to}`)).toEqual(['phase1->phase2', 'phase2->hybrid']);
    const last = llm.requests.at(-1)!;
    // The last 4 messages start at turn four's tool call; the range reaches back to that turn's user message.
    expect(last.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(userTexts(last)).toEqual(['four', 'five']);
    expect(session.state.mode).toBe('hybrid');
    await session.close();
  });

  it('injectHistory pins phase 1 whatever the memory, and /mode can pin and unpin at run time', async () => {
    const llm = scriptedModel([write(REAL), { text: 'ok' }, { text: 'ok' }, { text: 'ok' }, { text: 'ok' }]);
    const session = await newSession({ ...store.fresh(), llm, settings: { injectHistory: true, recentTurns: 0 } });
    await session.prompt('one');
    await session.prompt('two');
    expect(session.state.mode).toBe('phase1');
    expect(userTexts(llm.requests.at(-1)!)).toEqual(['one', 'two']);
    session.setMode('auto');
    await session.prompt('three');
    expect(session.state.mode).toBe('phase2'); // the memory is maintained: auto decides phase 2
    expect(userTexts(llm.requests.at(-1)!)).toEqual(['three']);
    session.setMode('phase1');
    await session.prompt('four');
    expect(userTexts(llm.requests.at(-1)!)).toEqual(['one', 'two', 'three', 'four']);
    expect(() => session.setMode('phase9' as never)).toThrow(/unknown history mode "phase9"/);
    await session.close();
  });

  it('the mode survives a restart', async () => {
    const where = store.fresh();
    const first = await newSession({ llm: scriptedModel([write(REAL), { text: 'ok' }]), ...where, settings: { recentTurns: 0 } });
    await first.prompt('remember this');
    expect(first.state.mode).toBe('phase2');
    await first.close();
    const llm = scriptedModel([{ text: 'still here' }]);
    const second = await openSession(first.id, { llm, ...where, env: {}, settings: { recentTurns: 0 } });
    expect(second.state.mode).toBe('phase2');
    await second.prompt('and now?');
    expect(userTexts(llm.requests[0]!)).toEqual(['and now?']);
    await second.close();
  });
});
