/**
 * 300-turn sessions with large tool outputs, phase 1 pinned so that the history grows:
 * a model that compacts on time stays under the threshold on every request without the
 * fallback ever firing; a model that never compacts is held inside the window by it.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { totalTokens } from '../../src/history/historyView.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { defineTool } from '../../src/tools/tool.js';
import { policyModel, protocolFollower } from '../../src/testing/index.js';
import { collect, newSession, ofType } from '../helpers.js';
import { memoryFileOf, storesUnderTest, type StoreUnderTest } from '../storage/stores.js';

const WINDOW = 32_000;
const RESERVE = 2_000;
const TURNS = 300;

const fetchTool = defineTool({
  name: 'fetch',
  description: 'Fetch a document',
  parameters: z.object({ input: z.string() }),
  // About 1,200-2,000 tokens per output.
  execute: ({ input }) => {
    const n = Number(/\d+/.exec(input)?.[0] ?? 0);
    return (
      `Document ${n}\n` + Array.from({ length: 60 + (n % 40) }, (_, i) => `row ${n}.${i}: value ${(n * 31 + i * 7) % 997} units`).join('\n')
    );
  },
});

function prompt(t: number): string {
  if (t % 10 === 1) return `My checkpoint ${t} is C${t * 3}. Use the fetch tool with document ${t}.`;
  return `Use the fetch tool with document ${t}.`;
}

async function runSession(store: StoreUnderTest, compacts: boolean) {
  const counter = await loadTokenCounter('gpt-4o');
  const llm = policyModel(protocolFollower({ seed: 5, forgetfulness: 0.2, compacts }), {
    contextWindow: WINDOW,
    maxOutputTokens: RESERVE,
    counter,
  });
  const session = await newSession({ ...store.fresh(), llm, tools: [fetchTool], settings: { injectHistory: true } });
  const events = collect(session);
  for (let t = 1; t <= TURNS; t++) {
    const result = await session.prompt(prompt(t));
    expect(result.status, `turn ${t}: ${result.error?.message}`).toBe('done');
  }
  await session.close();
  return { events, built: ofType(events, 'prompt_built'), compactions: ofType(events, 'compaction_end') };
}

describe.each(storesUnderTest('long session'))('300-turn sessions with large tool outputs ($name store)', (store) => {
  it('a model that compacts on time stays under the threshold on every request; the fallback never fires', async () => {
    const { built, compactions } = await runSession(store, true);
    expect(built.length).toBeGreaterThanOrEqual(TURNS * 2);
    const peak = Math.max(...built.map((b) => b.tokens.total));
    const figures = `compacting model: ${built.length} requests, peak ${peak} tokens (${Math.round((100 * peak) / WINDOW)} %), ${compactions.length} compactions by the model`;
    expect(peak, figures).toBeLessThan(0.75 * WINDOW);
    expect(compactions.length, figures).toBeGreaterThan(10);
    expect(compactions.every((c) => c.reason === 'llm')).toBe(true);
  });

  it('a model that never compacts is held inside the window by the fallback', async () => {
    const { built, compactions } = await runSession(store, false);
    const peak = Math.max(...built.map((b) => b.tokens.total));
    const figures = `non-compacting model: ${built.length} requests, peak ${peak} tokens, ${compactions.length} fallback compactions`;
    expect(compactions.length, figures).toBeGreaterThan(5);
    expect(compactions.every((c) => c.reason === 'fallback')).toBe(true);
    for (const b of built) expect(b.tokens.total + RESERVE).toBeLessThanOrEqual(WINDOW);
    // Every request after a compaction is below the threshold again.
    for (const c of compactions) {
      const next = built.find((b) => b.turn === c.turn && b.request === c.request)!;
      expect(next.tokens.total).toBeLessThan(0.75 * WINDOW);
    }
  });

  it('in phase 2 the history kept for phase 1 is archived at the threshold (the horizon): bounded, verbatim, no reminder', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const llm = policyModel(protocolFollower({ seed: 5, compacts: false }), { contextWindow: WINDOW, maxOutputTokens: RESERVE, counter });
    const session = await newSession({ ...store.fresh(), llm, tools: [fetchTool] });
    const events = collect(session);
    for (let t = 1; t <= 150; t++) expect((await session.prompt(prompt(t))).status).toBe('done');
    const horizon = ofType(events, 'compaction_end').filter((c) => c.reason === 'horizon');
    const reminders = ofType(events, 'reminder');
    const history = totalTokens(session.history);
    const archive = await memoryFileOf(session, horizon[0]!.files[0]!);
    await session.close();
    expect(session.state.mode).toBe('phase2');
    expect(horizon.length).toBeGreaterThan(0);
    // What phase 1 would send never crosses the threshold by more than a turn.
    expect(history).toBeLessThan(0.75 * WINDOW);
    for (const c of horizon) expect(c.tokensAfter).toBeLessThan(c.tokensBefore);
    // Archived verbatim: the first turn is in the first archive, word for word.
    expect(archive).toContain(prompt(1));
    // The model saw none of it, so it is not told to update its memory for it.
    for (const c of horizon) expect(reminders.some((r) => r.turn === c.turn && r.request === c.request + 1)).toBe(false);
  });
});
