/**
 * Property-based tests of compaction (fast-check): random sessions with random
 * sequences of compactions — called by the model with every target and strategy, and by
 * the fallback when the window fills — must never lose a message, never split a tool
 * call from its result, always derive a valid message list, never send a request over
 * the window, and never lose what an earlier compaction kept.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HistoryView } from '../../src/history/historyView.js';
import type { LLM, LLMRequest } from '../../src/llm/llm.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { openSession, type Session } from '../../src/session/index.js';
import { independentCount, newSession } from '../helpers.js';
import { logOf, memoryFileOf, storesUnderTest } from '../storage/stores.js';
import { checkPairs, probeTool, repliesFor, stepArb, words } from './randomSessions.js';

const scenarioArb = fc.record({
  window: fc.integer({ min: 3_500, max: 9_000 }),
  summarizer: fc.constantFrom('none', 'works', 'fails'),
  compaction: fc.constantFrom('llm' as const, 'auto' as const),
  steps: fc.array(stepArb, { minLength: 6, maxLength: 22 }),
});

const RESERVE = 200;

function viewMessages(view: HistoryView): ChatMessage[] {
  return view.items.slice(0, view.length).map((i) => i.message);
}

/** All text of `files` (working-memory/… as compaction names them), read through the session's store. */
async function textOf(session: Session, files: readonly string[]): Promise<string> {
  return (await Promise.all(files.map((f) => memoryFileOf(session, f)))).join('\n');
}

describe.each(storesUnderTest('compaction property'))('compaction properties ($name store)', (store) => {
  it('random sessions and compactions lose nothing, split nothing, and never exceed the window', async () => {
    const probe = probeTool();
    // One schema (on Postgres) and home for all runs: each run is a session of its own in them.
    const where = store.fresh();
    let runs = 0;
    let compactionsSeen = 0;
    let fallbacksSeen = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        runs++;
        const replies = scenario.steps.flatMap((step, t) => repliesFor(step, t + 1));
        const requests: LLMRequest[] = [];
        let next = 0;
        const base = scriptedModel(
          (request) => {
            requests.push(structuredClone(request));
            return replies[next++] ?? { text: 'spare' };
          },
          { contextWindow: scenario.window, maxOutputTokens: RESERVE },
        );
        const llm: LLM =
          scenario.summarizer === 'none'
            ? base
            : Object.assign(base, {
                summarize: async () => {
                  if (scenario.summarizer === 'fails') throw new Error('summarizer down');
                  return {
                    message: {
                      role: 'assistant' as const,
                      content: '## Goal\n- g\n## Decisions\n- d\n## Progress\n- p\n## Open items\n- o\n## Key facts\n- k',
                    },
                    usage: null,
                    finishReason: 'stop',
                  };
                },
              });
        const session = await newSession({
          llm,
          ...where,
          tools: [probe],
          settings: { injectHistory: true, compaction: scenario.compaction, keepRecentTurns: 2 },
        });

        // Repeated compactions never lose what an earlier one kept: compare each view before and after.
        // The views are taken as the events fire; the archives are read (through the store)
        // once the turn is over, since a listener cannot wait. Archives are only ever appended to.
        let before: HistoryView | null = null;
        const problems: string[] = [];
        const compacted: { turn: number; files: readonly string[]; before: HistoryView; after: HistoryView }[] = [];
        session.on('compaction_start', () => (before = session.history));
        session.on('compaction_end', (e) => {
          compactionsSeen++;
          if (e.reason === 'fallback' || e.reason === 'overflow') fallbacksSeen++;
          compacted.push({ turn: e.turn, files: e.files, before: before!, after: session.history });
        });
        const checkCompactions = async (): Promise<void> => {
          for (const { turn, files: names, before, after } of compacted.splice(0)) {
            const kept = new Map(after.items.slice(0, after.length).map((i) => [i.seq, i]));
            const files = await textOf(session, names);
            for (const item of before.items.slice(0, before.length)) {
              const now = kept.get(item.seq);
              if (now && now.message.content === item.message.content) continue;
              if (!files.includes(item.message.content ?? ''))
                problems.push(`seq ${item.seq} (${item.message.role}) lost by compaction at turn ${turn}`);
              for (const call of item.message.role === 'assistant' ? (item.message.tool_calls ?? []) : []) {
                if (!files.includes(call.function.arguments)) problems.push(`call ${call.id} lost`);
              }
            }
            checkPairs(viewMessages(after));
          }
        };

        for (let t = 0; t < scenario.steps.length; t++) {
          const result = await session.prompt(
            `user${t + 1} ${words((scenario.steps[t] as { userWords?: number }).userWords ?? 8, `u${t + 1}w`)}`,
          );
          // A turn may fail only because a single request could not fit at all; never anything else.
          if (result.status !== 'done') expect(result.error?.kind).toBe('window');
          await checkCompactions();
        }
        expect(problems).toEqual([]);

        // No request ever exceeded the window, by an independent count.
        for (const request of requests) expect(independentCount(request) + RESERVE).toBeLessThanOrEqual(scenario.window);
        // Each request is a valid Chat Completions message list.
        for (const request of requests) {
          expect(request.messages[0]!.role).toBe('system');
          checkPairs(request.messages);
        }

        // Every message ever added is recoverable from the log (messages.jsonl, or rows) + detail/ files.
        const entries = await logOf(session);
        const archive = await textOf(
          session,
          entries.flatMap((e) => (e.type === 'compaction' ? e.files : [])),
        );
        const live = viewMessages(session.history);
        const liveText = new Set(live.map((m) => m.content));
        for (const entry of entries) {
          if (entry.type !== 'message') continue;
          const text = entry.message.content ?? '';
          expect(liveText.has(text) || archive.includes(text), `message ${entry.seq} is neither in the history nor archived`).toBe(true);
        }
        checkPairs(live);

        // Resume derives exactly the same history.
        await session.close();
        const reopened = await openSession(session.id, { llm, ...where, env: {} });
        expect(reopened.damage).toEqual([]);
        expect(viewMessages(reopened.history)).toEqual(live);
        await reopened.close();
      }),
      { numRuns: 45, seed: 20261122 },
    );
    const figures = `compaction properties: ${runs} random sessions, ${compactionsSeen} compactions (${fallbacksSeen} by the fallback)`;
    expect(compactionsSeen, figures).toBeGreaterThan(40);
    expect(fallbacksSeen, figures).toBeGreaterThan(5);
  });
});
