/**
 * The memoryPosition setting (docs/design.md §4): where a request carries the working
 * memory. 'before-history' (the default, the spec's order), 'after-history', or 'by-phase'
 * (after the history in phase 1, before it otherwise); set by an embedder, WM_MEMORY_POSITION,
 * or the CLI's flag and config.json.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { ConfigError, resolveSettings } from '../../src/settings/config.js';
import { loadConfig, settingsOf } from '../../src/cli/config.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { protocolFollower } from '../../src/testing/index.js';
import { createActor, fromPromise, toPromise } from 'xstate';
import { collect, fixedMemoryStore, newSession, ofType, testServers } from '../helpers.js';
import { fromItems } from '../../src/history/historyView.js';
import { NOTHING_COMPACTED } from '../../src/compaction/apply.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { LLMError } from '../../src/llm/llm.js';
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

const serve = testServers();

describe('the memoryPosition setting', () => {
  const model = { contextWindow: 8000, maxOutputTokens: 1000 };

  it("defaults to 'before-history'; an embedder or WM_MEMORY_POSITION set it, the embedder first", () => {
    expect(resolveSettings(model, {}, {}).turn.memoryPosition).toBe('before-history');
    expect(resolveSettings(model, { memoryPosition: 'after-history' }, {}).turn.memoryPosition).toBe('after-history');
    expect(resolveSettings(model, {}, { WM_MEMORY_POSITION: 'after-history' }).turn.memoryPosition).toBe('after-history');
    expect(resolveSettings(model, {}, { WM_MEMORY_POSITION: ' ' }).turn.memoryPosition).toBe('before-history');
    expect(resolveSettings(model, {}, { WM_MEMORY_POSITION: 'by-phase' }).turn.memoryPosition).toBe('by-phase');
    expect(resolveSettings(model, { memoryPosition: 'before-history' }, { WM_MEMORY_POSITION: 'after-history' }).turn.memoryPosition).toBe(
      'before-history',
    );
  });

  it('refuses any other value, naming the setting and the value', () => {
    expect(() => resolveSettings(model, { memoryPosition: 'last' as never }, {})).toThrow(ConfigError);
    expect(() => resolveSettings(model, { memoryPosition: 'last' as never }, {})).toThrow(/setting memoryPosition="last" is invalid/);
    expect(() => resolveSettings(model, {}, { WM_MEMORY_POSITION: 'after' })).toThrow(
      /WM_MEMORY_POSITION="after" is invalid: expected one of before-history, after-history, by-phase/,
    );
  });

  it('the CLI reads it from flags > WM_MEMORY_POSITION > config.json', () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-position-'));
    try {
      expect(settingsOf(loadConfig({ home }, {})).memoryPosition).toBeUndefined();
      writeFileSync(join(home, 'config.json'), JSON.stringify({ memoryPosition: 'after-history' }));
      expect(settingsOf(loadConfig({ home }, {})).memoryPosition).toBe('after-history');
      expect(settingsOf(loadConfig({ home }, { WM_MEMORY_POSITION: 'before-history' })).memoryPosition).toBe('before-history');
      expect(
        settingsOf(loadConfig({ home, 'memory-position': 'after-history' }, { WM_MEMORY_POSITION: 'before-history' })).memoryPosition,
      ).toBe('after-history');
      expect(settingsOf(loadConfig({ home, 'memory-position': 'by-phase' }, {})).memoryPosition).toBe('by-phase');
      expect(() => loadConfig({ home, 'memory-position': 'middle' }, {})).toThrow(/--memory-position = "middle" is invalid/);
      writeFileSync(join(home, 'config.json'), JSON.stringify({ memoryPosition: 'top' }));
      expect(() => loadConfig({ home }, {})).toThrow(/config\.json: memoryPosition = "top" is invalid/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("workmem/testing's protocol follower reads the memory in either position", () => {
  /** Facts stated, questions on them, a reminder or two: what the follower does with the memory it reads. */
  async function conversation(memoryPosition: 'before-history' | 'after-history') {
    const server = await serve(protocolFollower({ seed: 5 }));
    const session = await newSession({
      llm: openaiChat({ baseURL: server.baseURL, apiKey: 'test', model: 'workmem-test', env: {} }),
      settings: { memoryPosition, historyMode: 'phase1' },
    });
    const events = collect(session);
    const answers: string[] = [];
    for (let t = 1; t <= 16; t++) {
      const text = t % 4 === 1 ? `My fact ${t} is V${t * 7}.` : t % 4 === 3 ? `What is my fact ${t - 2}?` : `Tell me about topic ${t}.`;
      answers.push((await session.prompt(text)).text);
    }
    const overview = readFileSync(join(session.dir, 'working-memory', 'overview.md'), 'utf8');
    await session.close();
    return { answers, overview, writes: ofType(events, 'memory_updated').length, requests: server.requests.length };
  }

  it('the same conversation gives the same answers, writes and memory before and after the history', async () => {
    const before = await conversation('before-history');
    const after = await conversation('after-history');
    expect(before.writes).toBeGreaterThan(0);
    expect(before.overview).toContain('V7');
    expect(after).toEqual(before);
  });
});

describe("'by-phase': the memory after the long history of phase 1, before the few messages of phase 2", () => {
  it('moves the notebook into the system message when the session switches to phase 2, and keeps each request to one notebook', async () => {
    const server = await serve(protocolFollower({ seed: 3 }));
    const session = await newSession({
      llm: openaiChat({ baseURL: server.baseURL, apiKey: 'test', model: 'workmem-test', env: {} }),
      settings: { memoryPosition: 'by-phase' },
    });
    const events = collect(session);
    for (let t = 1; t <= 12; t++) await session.prompt(t % 3 === 1 ? `My fact ${t} is V${t * 7}.` : `Tell me about topic ${t}.`);
    await session.close();
    const modes = ofType(events, 'prompt_built').map((e) => e.mode);
    expect(modes).toContain('phase1');
    expect(modes).toContain('phase2');
    expect(server.requests).toHaveLength(modes.length);
    server.requests.forEach((request, i) => {
      const messages = request.body.messages;
      const system = String(messages[0]!.content);
      const last = String(messages.at(-1)!.content ?? '');
      const notebooks = JSON.stringify(messages).split('<working_memory file=').length - 1;
      expect(notebooks, `request ${i}`).toBe(1);
      if (modes[i] === 'phase1') {
        expect(system, `request ${i}`).not.toContain('<working_memory file=');
        expect(last.startsWith('<working_memory'), `request ${i}`).toBe(true);
      } else {
        expect(system, `request ${i}`).toContain('<working_memory file=');
        expect(last, `request ${i}`).not.toContain('<working_memory file=');
      }
    });
  });
});

describe("'by-phase' when the mode changes while a compaction runs", () => {
  it('the request rebuilt after the compaction puts the memory where the new mode wants it, and prompt_built says that mode', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const user = { role: 'user' as const, content: 'What did we plant?' };
    const history = fromItems([{ seq: 1, turn: 1, message: user, tokens: counter.message(user) }]);
    const content = '# Working Memory\n\n## Current task\nThe rose bed.\n';
    const sent: ChatMessage[][] = [];
    let compactorStarted!: () => void;
    const started = new Promise<void>((resolve) => (compactorStarted = resolve));
    let finishCompaction!: () => void;
    const finished = new Promise<void>((resolve) => (finishCompaction = resolve));
    const machine = turnMachine.provide({
      actors: {
        memoryStore: fixedMemoryStore(content),
        compactor: fromPromise<CompactorOutput, CompactorInput>(async ({ input }) => {
          compactorStarted();
          await finished;
          return { history, replaced: 0, result: NOTHING_COMPACTED };
        }),
        llm: fromPromise<LlmOutput, LlmInput>(async ({ input }) => {
          sent.push(input.prompt.messages);
          if (sent.length === 1) throw new LLMError('overflow', 'context_length_exceeded');
          return { history, message: { role: 'assistant' as const, content: 'Roses.' }, usage: null, finishReason: 'stop' };
        }),
        toolRunner: fromPromise<ToolRunnerOutput, ToolRunnerInput>(async () => {
          throw new Error('not needed');
        }),
      },
    });
    const settings = { ...defaultTurnSettings(8000, 500), memoryPosition: 'by-phase' as const };
    const actor = createActor(machine, {
      input: {
        statics: { sessionId: 's', systemPrompt: 'You garden.', tools: [], counter, settings },
        turn: 1,
        history,
        mode: 'phase1',
        tracker: INITIAL_TRACKER,
        calibration: 0,
        base: null,
      },
    });
    const built: string[] = [];
    actor.on('prompt_built', (e) => built.push((e as Extract<SessionEvent, { type: 'prompt_built' }>).mode));
    actor.start();
    await started;
    actor.send({ type: 'mode.changed', mode: 'phase2' });
    finishCompaction();
    await toPromise(actor);
    expect(built).toEqual(['phase1', 'phase2']);
    // Phase 1: the memory opens the last message; phase 2: it is in the system message.
    expect(String(sent[0]![0]!.content)).not.toContain('<working_memory file=');
    expect(String(sent[0]!.at(-1)!.content).startsWith('<working_memory file=')).toBe(true);
    expect(String(sent[1]![0]!.content)).toContain('<working_memory file=');
    expect(String(sent[1]!.at(-1)!.content)).not.toContain('<working_memory file=');
  });
});
