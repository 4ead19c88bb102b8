/**
 * `/context` with pinned messages: the breakdown chat prints (ContextWatch, renderContext)
 * shows them as a group of their own — tokens, how many, which turns, where they are sent —
 * before the first request (the estimate) and after phase 2 left them behind its window,
 * and the groups still add up to what the request counted.
 */
import { describe, expect, it } from 'vitest';
import { ContextWatch, renderContext } from '../../src/cli/contextView.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { collect, newSession, ofType } from '../helpers.js';

const RULES = `Rules: answer briefly; metric units only. ${'Never suggest chemical sprays in the beds. '.repeat(20)}`;
const TASK = 'Task: plan the vegetable beds for spring.';

describe('/context with pinned messages', () => {
  it('shows a pinned group (tokens, count, turns, where sent) in the estimate and in phase 2, adding up to the request', async () => {
    const llm = scriptedModel(() => ({ text: `Sure. ${'Beans like warm soil. '.repeat(10)}` }), { contextWindow: 4_000 });
    const session = await newSession({
      llm,
      pinned: [RULES],
      settings: { historyMode: 'phase2', recentTurns: 1, recentTurnsStep: 1, reserveOutputTokens: 300 },
    });
    const events = collect(session);
    const watch = new ContextWatch(session);

    // Before the first request: the rules, pinned at creation (turn 0), are in the estimate.
    const estimate = await watch.breakdown();
    const rules = session.history.items[0]!;
    expect(estimate.groups.find((g) => g.key === 'pinned')).toMatchObject({
      tokens: rules.tokens,
      about: '1 message (turn 0), never compacted; in place in the history',
    });

    await session.prompt(TASK, { pin: true });
    for (let i = 1; i <= 4; i++) await session.prompt(`Question ${i} about the beds.`);
    const b = await watch.breakdown();
    const last = ofType(events, 'prompt_built').at(-1)!;
    expect(last.range[0]).toBeGreaterThan(2);
    const pinned = session.history.items.filter((i) => i.pinned);
    const group = b.groups.find((g) => g.key === 'pinned')!;
    expect(group.tokens).toBe(pinned[0]!.tokens + pinned[1]!.tokens);
    expect(group.about).toBe('2 messages (turns 0–1), never compacted; sent before the history');
    expect(b.groups.map((g) => g.key)).toEqual(['system', 'memory', 'detail_index', 'pinned', 'history', 'tail']);
    expect(b.groups.reduce((n, g) => n + g.tokens, 0)).toBe(last.tokens.counted);
    expect(b.groups.find((g) => g.key === 'history')!.tokens).toBe(last.tokens.history - group.tokens);

    const text = renderContext(b);
    expect(text).toMatch(/^ {2}pinned +\d+ +\d+\.\d % +2 messages \(turns 0–1\), never compacted; sent before the history$/m);
    expect(text).toContain('P pinned');
    expect(text).toMatch(/\[S+M+D*P+H+T*[·r|]+\]/);
    expect(text, text).toMatch(/\[S+M+D*P{3,}H/);
    watch.close();
    await session.close();
  });
});
