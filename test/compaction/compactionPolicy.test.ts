/**
 * The compaction policy's formulas, on hand-built histories: each expectation is worked
 * out from the numbers here, so a changed share, a lost tail allowance or a wrong range
 * fails a test.
 */
import { describe, expect, it } from 'vitest';
import { fromItems, tokensBetween, type HistoryItem, type HistoryView } from '../../src/history/historyView.js';
import type { ChatMessage } from '../../src/history/messages.js';
import type { PromptBase } from '../../src/prompt/promptBuilder.js';
import { AUTO_KEEP_TOOL_OUTPUTS } from '../../src/compaction/plan.js';
import {
  TAIL_ALLOWANCE,
  autoCompactionTier,
  beyondHorizon,
  carriedRange,
  compactionBudget,
  compactionOrder,
  overThreshold,
  shownPercent,
  thresholdPercent,
  thresholdTokens,
  type PolicyInput,
  type PolicySettings,
} from '../../src/compaction/policy.js';
import { nextWindow } from '../../src/history/recentWindow.js';

const BASE: PromptBase = {
  systemPrompt: 'system',
  tools: [],
  memoryVersion: 1,
  relevant: '',
  systemContent: 'system',
  tokens: 1000,
  memoryTokens: 200,
  memoryBytes: 800,
};
const SETTINGS: PolicySettings = {
  contextWindow: 10_000,
  fallbackThreshold: 0.75,
  backgroundThreshold: null,
  hybridRecent: 10,
  // The formulas below are worked out on phase 2's strict view (the active turn only).
  recentTurns: 0,
  recentTurnsStep: 1,
  compaction: 'llm',
  keepRecentTurns: 3,
  fallbackTarget: 'budget',
};

/** Turns of [user, assistant calling a tool, tool output, assistant answer], each message `tokens` tokens. */
function history(turns: number, tokens: number, toolTokens = tokens): HistoryView {
  const items: HistoryItem[] = [];
  let seq = 0;
  const push = (turn: number, message: ChatMessage, t: number): void => {
    items.push({ seq: seq++, turn, message, tokens: t });
  };
  for (let turn = 1; turn <= turns; turn++) {
    push(turn, { role: 'user', content: `question ${turn}` }, tokens);
    push(
      turn,
      { role: 'assistant', content: '', tool_calls: [{ id: `c${turn}`, type: 'function', function: { name: 'read', arguments: '{}' } }] },
      tokens,
    );
    push(turn, { role: 'tool', tool_call_id: `c${turn}`, content: `output ${turn}` }, toolTokens);
    push(turn, { role: 'assistant', content: `answer ${turn}` }, tokens);
  }
  return fromItems(items);
}

/** The tail the built requests below have (a <context_meta> and a reminder). */
const TAIL = 400;

/** A built request of `total` tokens, as the turn machine passes it (only its numbers are read). */
function built(total: number, window = SETTINGS.contextWindow): NonNullable<PolicyInput['prompt']> {
  const percent = Math.round((total / window) * 100);
  return {
    meta: {
      tokens_used: total,
      tokens_max: window,
      tokens_percent: percent,
      messages_in_history: 0,
      messages_sent: 0,
      working_memory_size: 0,
    },
    tokens: { system: 0, memory: 0, history: 0, tail: TAIL, counted: total, calibration: 0, total, cacheable: 0, window, percent },
  };
}

/** The policy's input; unless given, the request is built from the carried range with a TAIL-token tail. */
function input(view: HistoryView, over: Partial<PolicyInput> & { settings?: Partial<PolicySettings> } = {}): PolicyInput {
  const { settings, ...rest } = over;
  const lastTurn = view.length ? view.items[view.length - 1]!.turn : 1;
  const result: PolicyInput = {
    history: view,
    mode: 'phase1',
    turn: lastTurn,
    request: 1,
    compaction: { ran: false },
    calibration: 0,
    base: BASE,
    prompt: null,
    statics: { settings: { ...SETTINGS, ...settings } },
    ...rest,
  };
  if (over.prompt === undefined) {
    const [from, to] = carriedRange(result);
    result.prompt = built(
      result.base!.tokens + tokensBetween(view, from, to) + result.calibration + TAIL,
      result.statics.settings.contextWindow,
    );
  }
  return result;
}

describe('compaction policy', () => {
  it('puts the threshold at the fallback share of the window, rounded down', () => {
    expect(thresholdTokens({ contextWindow: 10_000, fallbackThreshold: 0.75 })).toBe(7500);
    expect(thresholdTokens({ contextWindow: 333, fallbackThreshold: 0.7 })).toBe(233);
  });

  it('carries the whole history in phase 1, the active turn in phase 2 with recentTurns 0, and more turns with more', () => {
    const view = history(5, 100); // 20 messages, 2000 tokens; the last turn holds 400
    expect(carriedRange(input(view))).toEqual([0, 20]);
    expect(carriedRange(input(view, { mode: 'phase2' }))).toEqual([16, 20]);
    expect(carriedRange(input(view, { mode: 'phase2', settings: { recentTurns: 2 } }))).toEqual([8, 20]);
  });

  it("phase 2's window holds its first turn while the notebook stays, up to recentTurns + step - 1 earlier turns", () => {
    const settings = { recentTurns: 2, recentTurnsStep: 3 };
    // Step 1 (the default): no window state, the last recentTurns turns each time.
    expect(nextWindow(null, 9, false, { recentTurns: 2, recentTurnsStep: 1 })).toBeNull();
    // Opened at turn 5 with the last 2 turns; held through turn 7 (4 earlier turns), started again at turn 8.
    const opened = nextWindow(null, 5, false, settings)!;
    expect(opened).toEqual({ from: 3 });
    expect(nextWindow(opened, 6, false, settings)).toBe(opened);
    expect(nextWindow(opened, 7, false, settings)).toBe(opened);
    expect(nextWindow(opened, 8, false, settings)).toEqual({ from: 6 });
    // A new memory block (the memory changed): started again at once, since what follows it is sent uncached anyway.
    expect(nextWindow(opened, 6, true, settings)).toEqual({ from: 4 });
    // Never before turn 1.
    expect(nextWindow(null, 2, false, settings)).toEqual({ from: 1 });

    // The range carries the window's turns: turn t starts at item 4 (t - 1).
    const view = history(12, 100);
    const range = (turn: number, window: { from: number } | null) => carriedRange(input(view, { mode: 'phase2', turn, window, settings }));
    expect(range(7, null)[0]).toBe(16); // turns 5 and 6 before the active one
    expect(range(7, { from: 3 })[0]).toBe(8);
    // A window shorter than recentTurns is widened to it.
    expect(range(7, { from: 7 })[0]).toBe(range(7, null)[0]);
    // By turn number, not by count: with turn 3 gone from the view, a window from turn 2 starts at turn 2.
    const gap = fromItems(history(5, 100).items.filter((i) => i.turn !== 3));
    expect(carriedRange(input(gap, { mode: 'phase2', turn: 5, window: { from: 2 }, settings }))[0]).toBe(4);
  });

  it('past its limit with turns after the last memory write that no longer all fit, it keeps the latest and reminds, a turn a request, while at most LEAVING_GRACE have gone', () => {
    const settings = { recentTurns: 1, recentTurnsStep: 10 }; // at most 10 earlier turns
    const view = history(20, 100); // 400 tokens a turn
    const sight = (lastWrite: number | null, budget = 1_000_000) => ({ history: view, lastWrite, budget });
    // Turns 3-13 unrecorded (the last write in turn 2): at turn 14 the window is past its limit. It
    // keeps turns 4-13 rather than starting again at 13 (which dropped all of them), and reminds of 4-12.
    const held = { from: 3 };
    const at14 = nextWindow(held, 14, false, settings, sight(2))!;
    expect(at14).toEqual({ from: 4, remind: { from: 4, to: 12 } });
    // Still no write: it slides a turn a request and reminds again, LEAVING_GRACE (3) requests in all.
    const at15 = nextWindow(at14, 15, false, settings, sight(2))!;
    expect(at15).toEqual({ from: 5, remind: { from: 5, to: 13 } });
    const at16 = nextWindow(at15, 16, false, settings, sight(2))!;
    expect(at16).toEqual({ from: 6, remind: { from: 6, to: 14 } });
    // Then it starts again: a model that does not write is not waited for.
    expect(nextWindow(at16, 17, false, settings, sight(2))).toEqual({ from: 16 });
    // The model wrote in turn 15: at 16 it starts again at the last recentTurns turns.
    expect(nextWindow(at15, 16, false, settings, sight(15))).toEqual({ from: 15 });
    // Only as many as the budget holds, counted to the end of the history (turns 6-20: 6,000 tokens),
    // and only while at most 3 of them have gone: with turns 3-6 gone (5,600 tokens), it starts again.
    expect(nextWindow(held, 14, false, settings, sight(2, 6000))).toEqual({ from: 6, remind: { from: 6, to: 12 } });
    expect(nextWindow(held, 14, false, settings, sight(2, 5600))).toEqual({ from: 13 });
    expect(nextWindow(held, 14, false, settings, sight(2, 1000))).toEqual({ from: 13 });
    // While all of them fit, they all stay, and the request reminds of them (turns 9-13, after a write in turn 8).
    expect(nextWindow(held, 14, false, settings, sight(8))).toEqual({ from: 9, remind: { from: 9, to: 12 } });
    // A model that never wrote (or whose write left the view) is not waited for either.
    expect(nextWindow(held, 14, false, settings, sight(null))).toEqual({ from: 13 });
  });

  it('started again by a notebook changed with no write of the model’s (a refresh), it keeps the turns after the last write that fit', () => {
    const settings = { recentTurns: 1, recentTurnsStep: 10 };
    const view = history(20, 100); // 400 tokens a turn
    const sight = (lastWrite: number | null, budget = 1_000_000) => ({ history: view, lastWrite, budget });
    const held = { from: 3 };
    // The last write in turn 2: turns 3-9 are unrecorded, and stay (a changed notebook alone would start at 9).
    expect(nextWindow(held, 10, true, settings, sight(2))).toEqual({ from: 3 });
    // Near its limit it reminds of those about to leave, as a held window does.
    expect(nextWindow(held, 12, true, settings, sight(2))).toEqual({ from: 3, remind: { from: 3, to: 10 } });
    // As many as the budget holds (turns 6-20: 6,000 tokens), at the budget's edge and so reminding;
    // none fit, or within its limit only: it starts again.
    expect(nextWindow(held, 10, true, settings, sight(2, 6000))).toEqual({ from: 6, remind: { from: 6, to: 8 } });
    expect(nextWindow(held, 10, true, settings, sight(2, 4000))).toEqual({ from: 9 });
    expect(nextWindow(held, 16, true, settings, sight(2))).toEqual({ from: 6, remind: { from: 6, to: 14 } });
    // The notebook changed by the model's write (turn 9), or a model that never wrote: it starts again.
    expect(nextWindow(held, 10, true, settings, sight(9))).toEqual({ from: 9 });
    expect(nextWindow(held, 10, true, settings, sight(null))).toEqual({ from: 9 });
    expect(nextWindow(held, 10, true, settings)).toEqual({ from: 9 });
  });

  it('fires the fallback when the request shows the threshold, not one percent below, and once per request', () => {
    expect(thresholdPercent({ fallbackThreshold: 0.75 })).toBe(75);
    expect(thresholdPercent({ fallbackThreshold: 0.7 })).toBe(70); // not 70.00000000000001
    const view = history(1, 10);
    // The shown percentage decides, whatever the history: 7450 tokens show 75 %, 7449 show 74 %.
    expect(shownPercent(input(view, { prompt: built(7450) }))).toBe(75);
    expect(overThreshold(input(view, { prompt: built(7450) }))).toBe(true);
    expect(overThreshold(input(view, { prompt: built(7449) }))).toBe(false);
    expect(overThreshold(input(view, { prompt: built(9000), compaction: { ran: true } }))).toBe(false);
    expect(overThreshold(input(view, { prompt: built(7000), settings: { fallbackThreshold: 0.7 } }))).toBe(true);
    // No decision without the request: the machine builds it first.
    expect(() => overThreshold(input(view, { prompt: null }))).toThrow(/not built yet/);
  });

  it('never sees a horizon in phase 1, and outside it measures what phase 1 would send', () => {
    const big = history(60, 50); // 12,000 tokens of history, far over the threshold
    expect(beyondHorizon(input(big, { mode: 'phase1' }))).toBe(false);
    expect(beyondHorizon(input(big, { mode: 'phase2' }))).toBe(true);
    expect(beyondHorizon(input(big, { mode: 'hybrid' }))).toBe(true);
    // Only at the first request of a turn, and not twice.
    expect(beyondHorizon(input(big, { mode: 'phase2', request: 2 }))).toBe(false);
    expect(beyondHorizon(input(big, { mode: 'phase2', compaction: { ran: true } }))).toBe(false);
    // The boundary: 1000 + 6100 + 400 = 7500 reaches it, one token less does not.
    const at = history(61, 25);
    expect(beyondHorizon(input(at, { mode: 'phase2' }))).toBe(true);
    expect(beyondHorizon(input(at, { mode: 'phase2', calibration: -1 }))).toBe(false);
  });

  it("with fallbackTarget 'recent-turns' the fallback keeps no more than the last keepRecentTurns turns and a note", () => {
    const view = history(61, 25); // 100 tokens a turn
    const recent = compactionBudget(input(view, { settings: { fallbackTarget: 'recent-turns' } }), 'fallback');
    // The active turn (61) and 3 before it, and the note that stands for the rest.
    expect(recent.budget).toBe(4 * 100 + 80);
    expect(recent.budget).toBeLessThan(compactionBudget(input(view), 'fallback').budget);
    // Where 2/3 of the threshold is less than that, the smaller budget wins, as before.
    const heavy = { ...BASE, tokens: 4_500 };
    expect(compactionBudget(input(view, { base: heavy, settings: { fallbackTarget: 'recent-turns' } }), 'fallback').budget).toBe(
      compactionBudget(input(view, { base: heavy }), 'fallback').budget,
    );
    // Only the fallback: an overflow and the horizon budget as before.
    for (const reason of ['overflow', 'horizon'] as const)
      expect(compactionBudget(input(view, { mode: 'phase2', settings: { fallbackTarget: 'recent-turns' } }), reason)).toEqual(
        compactionBudget(input(view, { mode: 'phase2' }), reason),
      );
  });

  it('compacts the fallback to 2/3 of the threshold, less everything that is not history', () => {
    const view = history(61, 25);
    const { range, budget, fixedTokens } = compactionBudget(input(view, { calibration: 20 }), 'fallback');
    expect(range).toEqual([0, view.length]);
    expect(fixedTokens).toBe(1000 + 20 + 400);
    expect(budget).toBe(Math.floor(7500 * (2 / 3)) - 1420 - 1); // 3579
    // In phase 2 the range is the carried one.
    expect(compactionBudget(input(view, { mode: 'phase2' }), 'fallback').range).toEqual([240, 244]);
  });

  it('compacts an overflow to half the threshold, and to at most half the carried history', () => {
    // A large history: the share decides (7500 / 2 − 1400 − 1 = 2349 < 6100 / 2).
    const large = history(61, 25);
    expect(compactionBudget(input(large), 'overflow').budget).toBe(2349);
    // A small one (the server counts far more than we do): halving it decides.
    const small = history(4, 100); // 1600 tokens
    const { budget, range } = compactionBudget(input(small), 'overflow');
    expect(range).toEqual([0, 16]);
    expect(budget).toBe(800);
    expect(budget).toBeLessThanOrEqual(1600 / 2);
    // The fallback does not halve.
    expect(compactionBudget(input(small), 'fallback').budget).toBe(Math.floor(7500 * (2 / 3)) - 1400 - 1);
  });

  it('gives the horizon what no request carries any more (the window it carries stays), and never a negative budget', () => {
    const view = history(10, 100);
    // Phase 2 here carries the active turn only: items 36 to 40 (4 items a turn).
    const horizon = compactionBudget(input(view, { mode: 'phase2' }), 'horizon');
    expect(horizon.range).toEqual([0, 36]);
    // Its budget is what the whole history may keep less what the carried turn holds.
    const fallback = compactionBudget(input(view, { mode: 'phase1' }), 'fallback');
    expect(horizon.budget).toBe(fallback.budget - 4 * 100);
    expect(horizon.budget).toBeGreaterThan(0);
    const heavy = { ...BASE, tokens: 9000 };
    expect(compactionBudget(input(view, { base: heavy }), 'fallback').budget).toBe(0);
  });

  it('orders the auto tier with the auto policy, and a budget for every other reason', () => {
    const view = history(10, 100);
    expect(TAIL_ALLOWANCE).toBe(400);
    expect(compactionOrder(input(view), 'auto', 'tools')).toEqual({
      kind: 'tier',
      reason: 'auto',
      turn: 10,
      range: [0, 40],
      tier: 'tools',
      keepRecentTurns: 3,
    });
    const { range, budget } = compactionBudget(input(view, { mode: 'phase2' }), 'horizon');
    expect(compactionOrder(input(view, { mode: 'phase2' }), 'horizon', null)).toEqual({
      kind: 'budget',
      reason: 'horizon',
      turn: 10,
      range,
      budget,
      keepRecentTurns: 3,
    });
  });

  it('applies the auto tiers only with the auto policy, at a first request, when there is something to compact', () => {
    // 20 % of 10,000 = 2000: 1000 base + 400 tail + 600 of history (6 turns × 4 × 25).
    const tools = history(6, 25, 25);
    const auto = { settings: { compaction: 'auto' as const } };
    // Tool outputs of 25 tokens are not worth a stub: nothing to compact, no tier.
    expect(autoCompactionTier(input(tools, auto))).toBeNull();
    // With outputs worth a stub (60+ tokens) beyond the last AUTO_KEEP_TOOL_OUTPUTS: 'tools'.
    const worth = history(AUTO_KEEP_TOOL_OUTPUTS + 1, 25, 70); // 6 × (75 + 70) = 870 → 23 %
    expect(autoCompactionTier(input(worth, auto))).toBe('tools');
    expect(autoCompactionTier(input(history(AUTO_KEEP_TOOL_OUTPUTS, 25, 70), auto))).toBeNull();
    expect(autoCompactionTier(input(worth))).toBeNull(); // policy 'llm'
    expect(autoCompactionTier(input(worth, { ...auto, request: 2 }))).toBeNull();
    expect(autoCompactionTier(input(worth, { ...auto, compaction: { ran: true } }))).toBeNull();
    // 40 %: 2600 of history → the conversation (old turns beyond the last 3).
    expect(autoCompactionTier(input(history(26, 25), auto))).toBe('conversation');
    // 60 %: 4600 of history → all.
    expect(autoCompactionTier(input(history(46, 25), auto))).toBe('all');
    // The tier is read off the shown percentage: 19 % shown is no tier whatever the history.
    expect(autoCompactionTier(input(history(46, 25), { ...auto, prompt: built(1949) }))).toBeNull();
    expect(autoCompactionTier(input(worth, { ...auto, prompt: built(1949) }))).toBeNull();
    expect(autoCompactionTier(input(worth, { ...auto, prompt: built(1950) }))).toBe('tools');
  });
});
