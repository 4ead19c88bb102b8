import { createActor, fromPromise, toPromise } from 'xstate';
import { describe, expect, it } from 'vitest';
import { fromItems } from '../../src/history/historyView.js';
import { INITIAL_TRACKER } from '../../src/memory/reminderTracker.js';
import { defaultTurnSettings } from '../../src/settings/settings.js';
import {
  loadTokenCounter,
  turnMachine,
  type CompactorInput,
  type CompactorOutput,
  type LlmInput,
  type LlmOutput,
  type SessionEvent,
  type ToolRunnerInput,
  type ToolRunnerOutput,
} from '../../machines/index.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { collect, fixedMemoryStore, newSession, ofType } from '../helpers.js';

describe('embedding', () => {
  it('the turn machine runs with actors a host provides, and reports through its events', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const user = { role: 'user' as const, content: 'What is 2 + 2?' };
    const history = fromItems([{ seq: 1, turn: 1, message: user, tokens: counter.message(user) }]);
    const content = '# Working Memory\n\n- arithmetic questions today\n';
    let sent: unknown = null;
    const machine = turnMachine.provide({
      actors: {
        memoryStore: fixedMemoryStore(content),
        compactor: fromPromise<CompactorOutput, CompactorInput>(async () => {
          throw new Error('not needed');
        }),
        llm: fromPromise<LlmOutput, LlmInput>(async ({ input }) => {
          sent = input.prompt.messages;
          return {
            history,
            message: { role: 'assistant' as const, content: '4' },
            usage: { promptTokens: 700, completionTokens: 1 },
            finishReason: 'stop',
          };
        }),
        toolRunner: fromPromise<ToolRunnerOutput, ToolRunnerInput>(async () => {
          throw new Error('not needed');
        }),
      },
    });
    const actor = createActor(machine, {
      input: {
        statics: { sessionId: 'host', systemPrompt: 'You are a calculator.', tools: [], counter, settings: defaultTurnSettings(8000, 500) },
        turn: 1,
        history,
        mode: 'phase2',
        tracker: INITIAL_TRACKER,
        calibration: 0,
        base: null,
      },
    });
    const events: SessionEvent[] = [];
    actor.on('*', (e) => events.push(e as SessionEvent));
    actor.start();
    const output = await toPromise(actor);
    expect(output).toMatchObject({ status: 'done', text: '4', requests: 1 });
    expect(output.calibration).toBe(
      700 - (events.find((e) => e.type === 'prompt_built') as Extract<SessionEvent, { type: 'prompt_built' }>).tokens.counted,
    );
    expect(events.map((e) => e.type)).toEqual(['memory_loaded', 'prompt_built']);
    expect((sent as { content: string }[])[0]!.content).toContain('arithmetic questions today');
    // Copied field by field on every assign: from 20 fields on, V8 makes each copy a dictionary (TurnContext).
    expect(Object.keys(actor.getSnapshot().context).length).toBeLessThanOrEqual(18);
  });

  it('concurrent prompts queue and run one turn at a time, in order', async () => {
    const llm = scriptedModel((request) => ({ text: `answer to ${request.messages.at(-1)!.content!.split('\n')[0]}`, delayMs: 5 }));
    const session = await newSession({ llm });
    const events = collect(session);
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((t) => session.prompt(t)));
    expect(results.map((r) => [r.turn, r.text])).toEqual([
      [1, 'answer to a'],
      [2, 'answer to b'],
      [3, 'answer to c'],
      [4, 'answer to d'],
    ]);
    // Never two turns at once: each turn_start follows the previous turn_end.
    const bounds = events.filter((e) => e.type === 'turn_start' || e.type === 'turn_end').map((e) => e.type);
    expect(bounds).toEqual(['turn_start', 'turn_end', 'turn_start', 'turn_end', 'turn_start', 'turn_end', 'turn_start', 'turn_end']);
    expect(ofType(events, 'turn_start').map((e) => e.text)).toEqual(['a', 'b', 'c', 'd']);
    await session.close();
  });

  it('events are stamped with the session id and time; a throwing listener does not break the session', async () => {
    const warnings: string[] = [];
    const session = await newSession({ llm: scriptedModel([{ text: 'x' }, { text: 'y' }]), now: () => 42, warn: (m) => warnings.push(m) });
    const seen: string[] = [];
    session.on('turn_end', () => {
      throw new Error('listener bug');
    });
    session.on('*', (e) => seen.push(`${e.sessionId === session.id}:${e.ts}:${e.type}`));
    expect((await session.prompt('one')).status).toBe('done');
    expect((await session.prompt('two')).status).toBe('done');
    expect(seen).toContain('true:42:turn_end');
    expect(warnings).toEqual(['an event listener threw: listener bug', 'an event listener threw: listener bug']); // the host's warn, not a process warning
    await session.close();
  });
});

describe('ordering', () => {
  it('enqueue then abort in the same tick stops that prompt; close right after enqueue settles it', async () => {
    const session = await newSession({ llm: scriptedModel(() => ({ text: 'answer', delayMs: 20 })) });
    const { result } = session.enqueue('first');
    session.abort();
    expect((await result).status).toBe('aborted');
    const late = session.enqueue('second');
    await session.close();
    expect(['aborted', 'done']).toContain((await late.result).status);
  });
});
