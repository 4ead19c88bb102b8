/**
 * The settings that trade a few more tokens for a warmer prompt cache (issue 16):
 * recentTurnsStep (phase 2's window keeps its start k turns in a row) and fallbackTarget
 * (how far the system's compaction at 75 % goes). Set by an embedder, WM_*, or the CLI's
 * flags and config.json; checked through sessions against the test server's prompt cache.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveSettings } from '../../src/settings/config.js';
import { loadConfig, settingsOf } from '../../src/cli/config.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { HostLoop } from '../../src/session/hostLoop.js';
import type { ProviderCaching } from '../../src/settings/settings.js';
import { collect, newSession, ofType, tempHome, testServers } from '../helpers.js';
import { hostTurns } from '../session/hostTurns.js';

const serve = testServers();
const model = { contextWindow: 8000, maxOutputTokens: 1000 };

describe('recentTurnsStep and fallbackTarget as settings', () => {
  it('default to 10, budget and when-cheap; an embedder or WM_* set them, the embedder first; anything else is refused with the name and value', () => {
    const turn = (o: object, env: NodeJS.ProcessEnv = {}) => resolveSettings(model, o, env).turn;
    expect(turn({})).toMatchObject({ recentTurnsStep: 10, fallbackTarget: 'budget', memoryRefresh: 'when-cheap' });
    expect(turn({}, { WM_MEMORY_REFRESH: 'every-write' })).toMatchObject({ memoryRefresh: 'every-write' });
    expect(() => turn({}, { WM_MEMORY_REFRESH: 'never' })).toThrow(
      /WM_MEMORY_REFRESH="never" is invalid: expected one of every-write, when-cheap/,
    );
    expect(turn({ recentTurnsStep: 4, fallbackTarget: 'recent-turns' })).toMatchObject({
      recentTurnsStep: 4,
      fallbackTarget: 'recent-turns',
    });
    expect(turn({}, { WM_RECENT_TURNS_STEP: '3', WM_FALLBACK_TARGET: 'recent-turns' })).toMatchObject({
      recentTurnsStep: 3,
      fallbackTarget: 'recent-turns',
    });
    expect(
      turn({ recentTurnsStep: 2, fallbackTarget: 'budget' }, { WM_RECENT_TURNS_STEP: '3', WM_FALLBACK_TARGET: 'recent-turns' }),
    ).toMatchObject({
      recentTurnsStep: 2,
      fallbackTarget: 'budget',
    });
    expect(() => turn({ recentTurnsStep: 0 })).toThrow(ConfigError);
    expect(() => turn({ recentTurnsStep: 0 })).toThrow(/setting recentTurnsStep=0 is invalid/);
    expect(() => turn({ fallbackTarget: 'all' })).toThrow(/setting fallbackTarget="all" is invalid/);
    expect(() => turn({}, { WM_RECENT_TURNS_STEP: '0' })).toThrow(
      /WM_RECENT_TURNS_STEP="0" is invalid: expected a whole number from 1 to 1000/,
    );
    expect(() => turn({}, { WM_RECENT_TURNS_STEP: '2.5' })).toThrow(/WM_RECENT_TURNS_STEP="2.5" is invalid/);
    expect(() => turn({}, { WM_FALLBACK_TARGET: 'deep' })).toThrow(
      /WM_FALLBACK_TARGET="deep" is invalid: expected one of budget, recent-turns/,
    );
  });

  it("caching is the model's: openaiChat says 'explicit' with cacheControl, else 'automatic', and a session's settings follow its model", () => {
    const chat = (cacheControl: boolean) =>
      openaiChat({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'gpt-4o', env: {}, ...(cacheControl ? { cacheControl } : {}) });
    expect(chat(true).caching).toBe('explicit');
    expect(chat(false).caching).toBe('automatic');
    expect(resolveSettings(model, {}, {}).turn.caching).toBe('automatic');
    expect(resolveSettings({ ...model, caching: 'explicit' }, {}, {}).turn.caching).toBe('explicit');
  });

  it('the CLI reads them from flags > WM_* > config.json', () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-cache-settings-'));
    try {
      expect(settingsOf(loadConfig({ home }, {}))).not.toHaveProperty('recentTurnsStep');
      writeFileSync(join(home, 'config.json'), JSON.stringify({ recentTurnsStep: 5, fallbackTarget: 'recent-turns' }));
      expect(settingsOf(loadConfig({ home }, {}))).toMatchObject({ recentTurnsStep: 5, fallbackTarget: 'recent-turns' });
      expect(settingsOf(loadConfig({ home }, { WM_RECENT_TURNS_STEP: '2', WM_FALLBACK_TARGET: 'budget' }))).toMatchObject({
        recentTurnsStep: 2,
        fallbackTarget: 'budget',
      });
      const flags = { home, 'recent-turns-step': '7', 'fallback-target': 'recent-turns' };
      expect(settingsOf(loadConfig(flags, { WM_RECENT_TURNS_STEP: '2', WM_FALLBACK_TARGET: 'budget' }))).toMatchObject({
        recentTurnsStep: 7,
        fallbackTarget: 'recent-turns',
      });
      expect(() => loadConfig({ home, 'recent-turns-step': 'two' }, {})).toThrow(/--recent-turns-step = "two" is invalid/);
      expect(() => loadConfig({ home, 'fallback-target': 'half' }, {})).toThrow(/--fallback-target = "half" is invalid/);
      writeFileSync(join(home, 'config.json'), JSON.stringify({ recentTurnsStep: 0 }));
      expect(() => loadConfig({ home }, {})).toThrow(/config\.json: recentTurnsStep = 0 is invalid/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/** The user messages a request carried, by their text. */
const asked = (messages: readonly ChatMessage[]) =>
  messages
    .filter((m) => m.role === 'user')
    .map((m) => /question (\d+)/.exec(String(m.content))?.[1])
    .filter(Boolean)
    .map(Number);

describe('recentTurnsStep in a phase 2 session', () => {
  async function run(step: number) {
    const server = await serve(() => ({ content: `An answer. ${'With some detail. '.repeat(30)}` }));
    const session = await newSession({
      llm: openaiChat({ baseURL: server.baseURL, apiKey: 'test', model: 'workmem-test', env: {} }),
      instructions: `House rules. ${'Keep answers short and cite the file you read. '.repeat(120)}`,
      settings: { historyMode: 'phase2', recentTurns: 2, recentTurnsStep: step },
    });
    for (let t = 1; t <= 12; t++) await session.prompt(`question ${t}: ${'what about the parser? '.repeat(10)}`);
    await session.close();
    return {
      turns: server.requests.map((r) => asked(r.body.messages)),
      cached: server.requests.reduce((n, r) => n + r.cachedTokens, 0),
      input: server.requests.reduce((n, r) => n + r.promptTokens, 0),
    };
  }

  it('with step 3 the window holds its first turn up to 4 earlier turns, and the cache serves more of the session than the sliding window', async () => {
    const [sliding, held] = [await run(1), await run(3)];
    expect(sliding.turns.slice(3, 9)).toEqual([
      [2, 3, 4],
      [3, 4, 5],
      [4, 5, 6],
      [5, 6, 7],
      [6, 7, 8],
      [7, 8, 9],
    ]);
    expect(held.turns.slice(3, 9)).toEqual([
      [1, 2, 3, 4],
      [1, 2, 3, 4, 5],
      [4, 5, 6],
      [4, 5, 6, 7],
      [4, 5, 6, 7, 8],
      [7, 8, 9],
    ]);
    expect(held.cached / held.input).toBeGreaterThan(sliding.cached / sliding.input + 0.05);
  });

  const writesAtTurn4 = () =>
    scriptedModel((request) => {
      const last = request.messages.at(-1)!;
      if (last.role === 'user' && String(last.content).startsWith('question 4'))
        return {
          toolCalls: [
            {
              name: 'write',
              arguments: { path: 'overview.md', content: '# Working Memory\n\n## Current task\nParser questions; 4 asked.\n' },
            },
          ],
        };
      return { text: `An answer. ${'With some detail. '.repeat(10)}` };
    });

  /**
   * The questions each request carried, over `turns` turns of a phase 2 session (window of 2
   * turns held up to 4) with `llm`: a Session's, or with `door` a host's loop (HostLoop, as
   * the doors drive it) opened with the caching a door gives it.
   */
  async function carried(
    llm: ReturnType<typeof scriptedModel>,
    turns: number,
    memoryRefresh: 'every-write' | 'when-cheap',
    door?: { caching: ProviderCaching },
  ) {
    const settings = { historyMode: 'phase2', recentTurns: 2, recentTurnsStep: 4, memoryRefresh } as const;
    const questions = Array.from({ length: turns }, (_, t) => `question ${t + 1}`);
    if (door) {
      const where = { home: tempHome(), cwd: '/work/project', env: {} };
      const loop = await HostLoop.open({ model: llm.model, contextWindow: llm.contextWindow, settings, ...door, ...where });
      expect(loop.session.settings.caching).toBe(door.caching);
      await hostTurns(loop, llm, questions);
      await loop.close();
    } else {
      const session = await newSession({ llm, settings });
      for (const question of questions) await session.prompt(question);
      await session.close();
    }
    return llm.requests.map((r) => asked(r.messages));
  }

  it("with memoryRefresh 'every-write', starts the window again at the request after a memory write, whose prefix after the memory is new anyway", async () => {
    // Turn 4 writes overview.md, then answers: its second request carries the new memory.
    // Requests: turns 1–3 one each, turn 4 two (the write, then the answer), turns 5–7 one each.
    expect(await carried(writesAtTurn4(), 7, 'every-write')).toEqual([
      [1],
      [1, 2],
      [1, 2, 3],
      [1, 2, 3, 4],
      [2, 3, 4],
      [2, 3, 4, 5],
      [2, 3, 4, 5, 6],
      [2, 3, 4, 5, 6, 7],
    ]);
  });

  it("with memoryRefresh 'every-write', a write that leaves overview.md's text as it was keeps the window (what is sent is the same)", async () => {
    const note = '# Working Memory\n\n## Current task\nParser questions.\n';
    const write = { toolCalls: [{ name: 'write', arguments: { path: 'overview.md', content: note } }] };
    // Turns 1 and 4 write the same text: only the first changes what the memory block sends.
    const llm = scriptedModel((request) => {
      const last = request.messages.at(-1)!;
      return last.role === 'user' && /^question [14]\b/.test(String(last.content)) ? write : { text: 'An answer.' };
    });
    expect(await carried(llm, 6, 'every-write')).toEqual([
      [1],
      [1],
      [1, 2],
      [1, 2, 3],
      [1, 2, 3, 4],
      [1, 2, 3, 4],
      [1, 2, 3, 4, 5],
      [1, 2, 3, 4, 5, 6],
    ]);
  });

  it("with memoryRefresh 'when-cheap' a memory write keeps the memory block and the window as they were, and the tail carries the change", async () => {
    const llm = writesAtTurn4();
    // Turn 4's answer keeps the window it had (from turn 1) and the system message as it was, up to its limit (5 earlier turns).
    expect(await carried(llm, 7, 'when-cheap')).toEqual([
      [1],
      [1, 2],
      [1, 2, 3],
      [1, 2, 3, 4],
      [1, 2, 3, 4],
      [1, 2, 3, 4, 5],
      [1, 2, 3, 4, 5, 6],
      [5, 6, 7],
    ]);
    const system = (r: number) => llm.requests[r]!.messages[0]!.content;
    expect(system(4)).toBe(system(3));
    const tail = String(llm.requests[4]!.messages.at(-1)!.content);
    expect(tail).toContain('<working_memory_update file="working-memory/overview.md">');
    expect(tail).toContain('Parser questions; 4 asked.');
    // Brought up to date when the window starts again, which sends what follows it anew anyway.
    expect(system(6)).toBe(system(3));
    expect(system(7)).toContain('Parser questions; 4 asked.');
    expect(String(llm.requests[7]!.messages.at(-1)!.content)).not.toContain('<working_memory_update');
  });

  it("through a door opened with caching 'explicit', a window restart keeps the held memory while its change is under a tenth of the cached prefix a refresh gives up", async () => {
    const [automatic, explicit] = [writesAtTurn4(), writesAtTurn4()];
    const windows = await carried(automatic, 7, 'when-cheap', { caching: 'automatic' });
    // The same windows either way (request 7 starts again at turn 5): only the memory's place differs.
    expect(await carried(explicit, 7, 'when-cheap', { caching: 'explicit' })).toEqual(windows);
    expect(windows.slice(6)).toEqual([
      [1, 2, 3, 4, 5, 6],
      [5, 6, 7],
    ]);
    const system = (llm: typeof automatic, r: number) => llm.requests[r]!.messages[0]!.content;
    const tail = (llm: typeof automatic, r: number) => String(llm.requests[r]!.messages.at(-1)!.content);
    // Automatic: the window's restart brings the memory up to date, as in a Session.
    expect(system(automatic, 7)).toContain('Parser questions; 4 asked.');
    expect(tail(automatic, 7)).not.toContain('<working_memory_update');
    // Explicit: the system prompt and memory (over 1024 tokens) stay cached; the tail carries the change on.
    expect(system(explicit, 7)).toBe(system(explicit, 3));
    expect(tail(explicit, 7)).toContain('<working_memory_update file="working-memory/overview.md">');
    expect(tail(explicit, 7)).toContain('Parser questions; 4 asked.');
  });
});

describe("fallbackTarget 'recent-turns' in a phase 1 session", () => {
  async function run(fallbackTarget: 'budget' | 'recent-turns') {
    const llm = scriptedModel(() => ({ text: `Reply: ${'details '.repeat(300)}` }), { contextWindow: 6000, maxOutputTokens: 300 });
    const session = await newSession({ llm, settings: { injectHistory: true, fallbackTarget, keepRecentTurns: 2 } });
    const events = collect(session);
    for (let t = 1; t <= 40; t++) await session.prompt(`question ${t}`);
    await session.close();
    const ends = ofType(events, 'compaction_end').filter((e) => e.replaced > 0);
    const after = ends.map((e) =>
      asked(llm.requests[ofType(events, 'prompt_built').findIndex((b) => b.turn === e.turn && b.request === e.request)]!.messages),
    );
    return { compactions: ends.length, after };
  }

  it('leaves the last keepRecentTurns turns and the active one after each compaction, and compacts less often than the budget', async () => {
    const [budget, recent] = [await run('budget'), await run('recent-turns')];
    expect(recent.compactions).toBeGreaterThan(0);
    for (const carried of recent.after) expect(carried).toHaveLength(3);
    expect(Math.max(...budget.after.map((c) => c.length))).toBeGreaterThan(3);
    expect(recent.compactions).toBeLessThan(budget.compactions);
  });
});
