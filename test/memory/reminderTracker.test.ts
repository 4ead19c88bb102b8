import { describe, expect, it } from 'vitest';
import { ConfigError, resolveSettings } from '../../src/settings/config.js';
import {
  checkRound,
  DEFAULT_REMINDER_CONFIG,
  INITIAL_TRACKER,
  markUpdated,
  remindNextRequest,
  type TrackerState,
} from '../../src/memory/reminderTracker.js';
import { openSession } from '../../src/session/index.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { collect, newSession, ofType, splitTail } from '../helpers.js';
import { logOf, storesUnderTest } from '../storage/stores.js';

const config = DEFAULT_REMINDER_CONFIG;

/** Run rounds at the given token percentages; the round numbers at which a reminder was due. */
function remindedAt(percents: number[], start: TrackerState = INITIAL_TRACKER): number[] {
  let state = start;
  const out: number[] = [];
  percents.forEach((p, i) => {
    const r = checkRound(state, p, config);
    state = r.state;
    if (r.due) out.push(i + 1);
  });
  return out;
}

describe('reminder tracker (docs/design.md §5)', () => {
  it('scenario 1: an update resets the count, so no reminder follows', () => {
    let state = checkRound(INITIAL_TRACKER, 10, config).state; // round 1: no reminder
    expect(state.rounds).toBe(1);
    state = markUpdated(state, 1000); // round 2: the model writes overview.md
    expect(state.rounds).toBe(0);
    const round3 = checkRound(state, 10, config);
    expect(round3.due).toBeNull();
    expect(round3.state.rounds).toBe(1);
  });

  it('scenario 2: rounds 1-5 are quiet, round 6 reminds', () => {
    expect(remindedAt([10, 10, 10, 10, 10])).toEqual([]);
    expect(remindedAt([10, 10, 10, 10, 10, 10])).toEqual([6]);
    const due = checkRound({ ...INITIAL_TRACKER, rounds: 5 }, 10, config).due!;
    expect(due).toMatchObject({ reason: 'rounds', rounds: 6, level: 'gentle' });
  });

  it('scenario 3: above 70 % tokens, round 4 reminds early', () => {
    expect(remindedAt([45, 52, 68, 73])).toEqual([4]);
    const due = checkRound({ ...INITIAL_TRACKER, rounds: 3 }, 73, config).due!;
    expect(due.reason).toBe('tokens');
    // …but not before the minimum number of rounds, however full the context is.
    expect(remindedAt([90, 90, 90])).toEqual([]);
  });

  it('escalates gentle → firm → urgent with each ignored reminder, and one step above 50 %', () => {
    let state: TrackerState = { ...INITIAL_TRACKER, rounds: 5 };
    const levels: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = checkRound(state, 20, config);
      levels.push(r.due!.level);
      state = r.state;
    }
    expect(levels).toEqual(['gentle', 'firm', 'urgent', 'urgent']);
    expect(state.ignored).toBe(3);
    expect(checkRound({ ...INITIAL_TRACKER, rounds: 5 }, 55, config).due!.level).toBe('firm');
    // Acting on it starts the scale again.
    const after = markUpdated(state, 0);
    expect(after.ignored).toBe(0);
    expect(checkRound({ ...after, rounds: 5 }, 20, config).due!.level).toBe('gentle');
  });

  it('reminds on the very next request after a compaction', () => {
    const r = checkRound(remindNextRequest(INITIAL_TRACKER), 5, config);
    expect(r.due).toMatchObject({ reason: 'compaction' });
    expect(r.state.forceNext).toBe(false);
  });

  it('can be disabled and tuned from the environment', () => {
    expect(checkRound({ ...INITIAL_TRACKER, rounds: 50 }, 99, { ...config, enabled: false }).due).toBeNull();
    const model = { contextWindow: 8000, maxOutputTokens: 500 };
    const tuned = resolveSettings(
      model,
      {},
      { WM_MAX_ROUNDS: '2', WM_MIN_ROUNDS: '1', WM_TOKEN_THRESHOLD: '40', WM_ENABLE_REMINDER: 'false' },
    );
    expect(tuned.turn.reminder).toEqual({ enabled: false, maxRounds: 2, minRounds: 1, tokenThreshold: 40 });
  });

  it('rejects bad environment values by name', () => {
    const model = { contextWindow: 8000, maxOutputTokens: 500 };
    expect(() => resolveSettings(model, {}, { WM_MAX_ROUNDS: 'five' })).toThrow(ConfigError);
    expect(() => resolveSettings(model, {}, { WM_MAX_ROUNDS: 'five' })).toThrow(/WM_MAX_ROUNDS="five"/);
    expect(() => resolveSettings(model, {}, { WM_TOKEN_THRESHOLD: '170' })).toThrow(/WM_TOKEN_THRESHOLD="170".*0 to 100/);
    expect(() => resolveSettings(model, {}, { WM_ENABLE_REMINDER: 'maybe' })).toThrow(/WM_ENABLE_REMINDER="maybe"/);
    expect(() => resolveSettings(model, { fallbackThreshold: 2 })).toThrow(/fallbackThreshold=2/);
    expect(() => resolveSettings(model, { reminder: { maxRounds: 0 } })).toThrow(/reminder.maxRounds=0/);
    expect(() => resolveSettings(model, { bogus: 1 } as never)).toThrow(/bogus/);
  });
});

describe.each(storesUnderTest('reminder'))('reminders in a session ($name store)', (store) => {
  const chatty = () => scriptedModel(() => ({ text: 'ok' }));

  it('the sixth request carries the reminder in its tail, with the numbers docs/design.md §5 asks for, and nothing of it is stored', async () => {
    const llm = chatty();
    const session = await newSession({ ...store.fresh(), llm });
    const events = collect(session);
    for (let i = 1; i <= 6; i++) await session.prompt(`message ${i}`);
    const reminders = ofType(events, 'reminder');
    expect(reminders.map((r) => r.request + r.turn * 100)).toEqual([601]);
    expect(reminders[0]).toMatchObject({ rounds: 6, level: 'gentle', reason: 'rounds' });

    const tails = llm.requests.map((r) => splitTail(r.messages.at(-1)!.content!));
    expect(tails.slice(0, 5).every((t) => t.reminder === null)).toBe(true);
    const text = tails[5]!.reminder!;
    const meta = tails[5]!.meta;
    expect(text).toContain('You have not updated your working memory for 6 requests');
    expect(text).toContain(`Tokens: ${meta.tokens_percent}% (${meta.tokens_used} / ${meta.tokens_max})`);
    expect(text).toContain(`Messages in history: ${meta.messages_in_history}`);
    expect(text).toContain(`Working memory size: ${(meta.working_memory_size! / 1024).toFixed(2)} KB`);
    expect(text).toContain('working-memory/overview.md');
    expect(text).toContain('working-memory/detail/');

    const log = JSON.stringify(await logOf(session));
    expect(log).not.toContain('context_meta');
    expect(log).not.toContain('memory_reminder');
    expect(log).not.toContain('WORKING MEMORY');
    await session.close();
  });

  it("the suggested archive file is named with today's date, from the session's clock", async () => {
    for (const language of ['en', 'zh'] as const) {
      const llm = chatty();
      // Noon UTC: the same day in every time zone within ±11 h.
      const session = await newSession({ ...store.fresh(), llm, now: () => Date.UTC(2026, 2, 14, 12, 0), settings: { language } });
      for (let i = 1; i <= 6; i++) await session.prompt(`message ${i}`);
      const reminder = splitTail(llm.requests[5]!.messages.at(-1)!.content!).reminder!;
      expect(reminder).toContain('working-memory/detail/completed-2026-03-14.md');
      expect(reminder).not.toContain('YYYY');
      await session.close();
    }
  });

  it('a session that runs past midnight names the new day, with no memory write in between', async () => {
    const llm = chatty();
    let t = Date.UTC(2026, 2, 14, 12, 0);
    const session = await newSession({ ...store.fresh(), llm, now: () => t });
    for (let i = 1; i <= 6; i++) await session.prompt(`message ${i}`);
    expect(splitTail(llm.requests[5]!.messages.at(-1)!.content!).reminder!).toContain('completed-2026-03-14.md');
    t += 24 * 3_600_000; // a day later: the memory is unchanged, the prompt base is not reused
    await session.prompt('message 7');
    const next = splitTail(llm.requests.at(-1)!.messages.at(-1)!.content!).reminder!;
    expect(next).toContain('completed-2026-03-15.md');
    await session.close();
  });

  it('a write to overview.md resets the count', async () => {
    const llm = scriptedModel((request, i) =>
      i === 3
        ? {
            toolCalls: [
              {
                name: 'edit',
                arguments: { path: 'working-memory/overview.md', old: '## Current task', new: '## Current task\nTesting resets.' },
              },
            ],
          }
        : { text: 'ok' },
    );
    const session = await newSession({ ...store.fresh(), llm });
    const events = collect(session);
    for (let i = 1; i <= 8; i++) await session.prompt(`message ${i}`);
    expect(ofType(events, 'memory_updated')).toHaveLength(1);
    // 4 requests, the write (rounds reset), then 5 more: the sixth request after the write would remind.
    expect(ofType(events, 'reminder')).toHaveLength(0);
    expect(session.state.tracker.rounds).toBe(5);
    await session.close();
  });

  it('the tracker survives a restart: rounds continue where they were', async () => {
    const where = store.fresh();
    const first = await newSession({ llm: chatty(), ...where });
    for (let i = 1; i <= 4; i++) await first.prompt(`message ${i}`);
    await first.close();

    const llm = chatty();
    const second = await openSession(first.id, { llm, ...where, env: {} });
    expect(second.state.tracker.rounds).toBe(4);
    const events = collect(second);
    await second.prompt('message 5');
    await second.prompt('message 6');
    expect(ofType(events, 'reminder').map((r) => r.rounds)).toEqual([6]);
    expect(splitTail(llm.requests[1]!.messages.at(-1)!.content!).reminder).toContain('6 requests');
    await second.close();
  });

  it('escalates across requests when the reminder is ignored, in Chinese when asked', async () => {
    const llm = chatty();
    const session = await newSession({ ...store.fresh(), llm, settings: { language: 'zh' } });
    const events = collect(session);
    for (let i = 1; i <= 8; i++) await session.prompt(`消息 ${i}`);
    expect(ofType(events, 'reminder').map((r) => r.level)).toEqual(['gentle', 'firm', 'urgent']);
    const last = splitTail(llm.requests[7]!.messages.at(-1)!.content!).reminder!;
    expect(last).toContain('你已经连续 8 轮没有更新 working memory 了');
    expect(last).toContain('level="urgent"');
    expect(session.memory()).toContain('## 当前任务');
    await session.close();
  });
});
