/**
 * Property-based tests of pinned messages (fast-check): random sessions with random pins
 * (rules pinned at creation, prompts pinned as they come), in every history mode, with
 * random compactions — the model's compact_history, the user's /compact, the fallback, the
 * horizon — never lose a pinned message from the history a request carries: every request
 * carries every pin recorded before it (those older than the window sent first), the
 * history keeps each one unchanged at its seq, no compaction entry archives one, pairs are
 * never split, no request exceeds the window, and a resumed session has the same pins.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pinsBetween, type HistoryView } from '../../src/history/historyView.js';
import type { LLMRequest } from '../../src/llm/llm.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { openSession } from '../../src/session/index.js';
import { independentCount, newSession } from '../helpers.js';
import { logOf, storesUnderTest } from '../storage/stores.js';
import { checkPairs, probeTool, repliesFor, stepArb, words } from './randomSessions.js';

/** A random step, maybe pinned, maybe after the user's /compact. */
const pinnedStepArb = fc.record({
  step: stepArb,
  pin: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  manual: fc.option(
    fc.record({ target: fc.constantFrom('conversation' as const, 'tools' as const, 'all' as const), keep: fc.integer({ min: 0, max: 4 }) }),
    { freq: 4 },
  ),
});
const scenarioArb = fc.record({
  window: fc.integer({ min: 3_500, max: 8_000 }),
  mode: fc.constantFrom('auto' as const, 'phase1' as const, 'phase2' as const, 'hybrid' as const),
  rules: fc.array(fc.integer({ min: 5, max: 60 }), { maxLength: 2 }),
  recentTurns: fc.integer({ min: 0, max: 2 }),
  hybridRecent: fc.integer({ min: 1, max: 6 }),
  compaction: fc.constantFrom('llm' as const, 'auto' as const),
  steps: fc.array(pinnedStepArb, { minLength: 6, maxLength: 18 }),
});

const RESERVE = 200;

describe.each(storesUnderTest('pinned compaction property'))('pinned messages under compaction ($name store)', (store) => {
  it('random sessions with random pins: no pin ever leaves the carried history, pairs stay whole, the window holds', async () => {
    const probe = probeTool();
    const where = store.fresh();
    let runs = 0;
    let sentFirst = 0;
    let keptByArchives = 0;
    let compactions = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        runs++;
        const replies = scenario.steps.flatMap(({ step }, t) => repliesFor(step, t + 1));
        // Each request sent, with what it was built from: the history view and its prompt_built event (just before it).
        const sentWith: { request: LLMRequest; view: HistoryView; range: [number, number]; pinned: number[] }[] = [];
        let last: Omit<(typeof sentWith)[number], 'request'> | null = null;
        let next = 0;
        const llm = scriptedModel(
          (request) => {
            sentWith.push({ request: structuredClone(request), ...last! });
            return replies[next++] ?? { text: 'spare' };
          },
          { contextWindow: scenario.window, maxOutputTokens: RESERVE },
        );
        const settings = {
          historyMode: scenario.mode,
          compaction: scenario.compaction,
          keepRecentTurns: 1,
          recentTurns: scenario.recentTurns,
          hybridRecent: scenario.hybridRecent,
        };
        const rules = scenario.rules.map((n, r) => `rule${r + 1} ${words(n, `p0.${r}w`)}`);
        const session = await newSession({ llm, ...where, tools: [probe], settings, pinned: rules });
        session.on('prompt_built', (e) => (last = { view: session.history, range: e.range, pinned: e.pinned ?? [] }));
        session.on('compaction_end', (e) => (compactions += e.replaced > 0 ? 1 : 0));

        for (let t = 0; t < scenario.steps.length; t++) {
          const { step, pin, manual } = scenario.steps[t]!;
          if (manual) await session.compact({ target: manual.target, keepRecent: manual.keep });
          const userWords = step.kind === 'chat' ? step.userWords : 8;
          const result = await session.prompt(`user${t + 1} ${words(userWords, `u${t + 1}w`)}`, { pin });
          // A turn may fail only because a single request could not fit at all; never anything else.
          if (result.status !== 'done') expect(result.error?.kind).toBe('window');
        }

        // Every request: every pin of its view, each pin older than the range right after the system message, in order.
        let seen: number[] = [];
        sentWith.forEach(({ request, view, range, pinned }, r) => {
          const pins = pinsBetween(view, 0, view.length);
          expect(pinned, `request ${r + 1}`).toEqual(pins);
          const seqs = pins.map((i) => view.items[i]!.seq);
          // Pins only ever come: none of those an earlier request carried is missing.
          expect(seqs.slice(0, seen.length), `request ${r + 1}`).toEqual(seen);
          seen = seqs;
          const first = pins.filter((i) => i < range[0]);
          if (first.length) sentFirst++;
          const sent = request.messages;
          expect(sent.slice(1, 1 + first.length)).toEqual(first.map((i) => view.items[i]!.message));
          for (const i of pins.filter((i) => i >= range[0])) {
            const at = 1 + first.length + i - range[0];
            const text = view.items[i]!.message.content ?? '';
            expect(sent[at]!.content === text || (at === sent.length - 1 && sent[at]!.content!.includes(text))).toBe(true);
          }
          checkPairs(sent);
          expect(independentCount(request) + RESERVE).toBeLessThanOrEqual(scenario.window);
        });

        // The log: every pinned entry is in the history as it was logged; no compaction replaced one.
        const entries = await logOf(session);
        const pinnedEntries = entries.filter((e) => e.type === 'message' && e.pinned);
        const view = session.history;
        const live = view.items.slice(0, view.length);
        expect(live.filter((i) => i.pinned).map((i) => [i.seq, i.message.content])).toEqual(
          pinnedEntries.map((e) => [e.seq, e.type === 'message' ? e.message.content : null]),
        );
        expect(pinnedEntries.length).toBe(rules.length + scenario.steps.filter((s) => s.pin).length);
        const pinnedSeqs = new Set(pinnedEntries.map((e) => e.seq));
        for (const e of entries) {
          if (e.type !== 'compaction') continue;
          for (const seq of e.replaces?.kept ?? []) expect(pinnedSeqs.has(seq)).toBe(true);
          keptByArchives += e.replaces?.kept?.length ?? 0;
          for (const stub of e.stubs ?? []) expect(pinnedSeqs.has(stub.seq)).toBe(false);
        }
        checkPairs(live.map((i) => i.message));

        // Resumed, here or by another instance: the same history and pins.
        await session.close();
        for (const at of [where, store.elsewhere(where)]) {
          const reopened = await openSession(session.id, { llm, ...at, env: {}, pinned: rules });
          expect(reopened.damage).toEqual([]);
          expect(reopened.history.items.slice(0, reopened.history.length)).toEqual(
            live.map((i) => ({ ...i, message: JSON.parse(JSON.stringify(i.message)) })),
          );
          expect(pinsBetween(reopened.history, 0, reopened.history.length)).toEqual(pinsBetween(view, 0, view.length));
          await reopened.close();
        }
      }),
      { numRuns: 30, seed: 20261126 },
    );
    const figures = `${runs} random sessions, ${compactions} compactions, ${keptByArchives} pins kept inside archives, ${sentFirst} requests sending pins before the window`;
    expect(compactions, figures).toBeGreaterThan(40);
    expect(keptByArchives, figures).toBeGreaterThan(5);
    expect(sentFirst, figures).toBeGreaterThan(50);
  });
});
