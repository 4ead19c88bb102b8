/**
 * Phase 2 carries the last `recentTurns` complete exchanges before the active turn
 * (docs/design.md §2.6): whole turns only, so a tool call never travels without its
 * result, and 0 is the strict active-turn-only view.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromItems, injectedRange, type HistoryItem, type HistoryView } from '../../src/history/historyView.js';
import { ConfigError, resolveSettings } from '../../src/settings/config.js';
import { loadConfig, settingsOf } from '../../src/cli/config.js';
import type { ChatMessage } from '../../src/history/messages.js';

type Shape = 'plain' | 'tools';

/** Turns 1..n: a plain turn is [user, answer]; a tool turn is [user, call, output, call, output, answer]. */
function history(shapes: Shape[]): HistoryView {
  const items: HistoryItem[] = [];
  let seq = 0;
  const push = (turn: number, message: ChatMessage): void => {
    items.push({ seq: seq++, turn, message, tokens: 10 });
  };
  shapes.forEach((shape, i) => {
    const turn = i + 1;
    push(turn, { role: 'user', content: `question ${turn}` });
    if (shape === 'tools') {
      for (const n of [1, 2]) {
        const id = `c${turn}.${n}`;
        push(turn, { role: 'assistant', content: '', tool_calls: [{ id, type: 'function', function: { name: 'read', arguments: '{}' } }] });
        push(turn, { role: 'tool', tool_call_id: id, content: `output ${id}` });
      }
    }
    push(turn, { role: 'assistant', content: `answer ${turn}` });
  });
  return fromItems(items);
}

/** The history with the active turn's user message appended. */
function withActive(view: HistoryView, turn: number): HistoryView {
  return fromItems([...view.items.slice(0, view.length), { seq: 999, turn, message: { role: 'user', content: 'now' }, tokens: 10 }]);
}

const carry = (recentTurns: number) => ({ hybridRecent: 10, recentTurns });
const turnsIn = (view: HistoryView, [from, to]: [number, number]) => [...new Set(view.items.slice(from, to).map((i) => i.turn))];

describe('phase 2 range: the last N complete exchanges + the active turn', () => {
  const view = withActive(history(['plain', 'tools', 'plain', 'tools', 'plain']), 6); // 2+6+2+6+2 = 18 items, then the active one

  it('recentTurns 0 is the active turn only', () => {
    expect(injectedRange(view, 'phase2', 6, carry(0))).toEqual([18, 19]);
  });

  it('recentTurns 1 adds the previous exchange, from its user message', () => {
    const range = injectedRange(view, 'phase2', 6, carry(1));
    expect(range).toEqual([16, 19]);
    expect(turnsIn(view, range)).toEqual([5, 6]);
    expect(view.items[range[0]]!.message.role).toBe('user');
  });

  it('recentTurns 3 adds three whole exchanges, a turn with tool calls kept whole', () => {
    const range = injectedRange(view, 'phase2', 6, carry(3));
    expect(turnsIn(view, range)).toEqual([3, 4, 5, 6]);
    expect(range).toEqual([8, 19]);
    // Every tool call carried has its result carried too, and no result comes without its call.
    const carried = view.items.slice(...range).map((i) => i.message);
    const calls = carried.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
    const results = carried.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
    expect(calls).toEqual(['c4.1', 'c4.2']);
    expect(results).toEqual(calls);
  });

  it('fewer earlier turns than N: everything there is', () => {
    const short = withActive(history(['tools', 'plain']), 3);
    expect(injectedRange(short, 'phase2', 3, carry(3))).toEqual([0, short.length]);
    const first = withActive(history([]), 1);
    expect(injectedRange(first, 'phase2', 1, carry(3))).toEqual([0, 1]);
  });

  it('the active turn in the middle of a tool loop is carried whole with the exchanges before it', () => {
    const looping = history(['plain', 'plain', 'tools']); // turn 3 is active, its tool calls answered so far
    const range = injectedRange(looping, 'phase2', 3, carry(1));
    expect(turnsIn(looping, range)).toEqual([2, 3]);
    expect(range).toEqual([2, looping.length]);
  });

  it('phase 1 and hybrid ignore recentTurns', () => {
    expect(injectedRange(view, 'phase1', 6, carry(0))).toEqual([0, 19]);
    expect(injectedRange(view, 'hybrid', 6, { hybridRecent: 4, recentTurns: 0 })).toEqual(
      injectedRange(view, 'hybrid', 6, { hybridRecent: 4, recentTurns: 3 }),
    );
  });
});

describe('the recentTurns setting', () => {
  const model = { contextWindow: 8000, maxOutputTokens: 1000 };

  it('defaults to 1; an embedder, WM_RECENT_TURNS or 0 set it', () => {
    expect(resolveSettings(model, {}, {}).turn.recentTurns).toBe(1);
    expect(resolveSettings(model, { recentTurns: 0 }, {}).turn.recentTurns).toBe(0);
    expect(resolveSettings(model, {}, { WM_RECENT_TURNS: '5' }).turn.recentTurns).toBe(5);
    expect(resolveSettings(model, { recentTurns: 3 }, { WM_RECENT_TURNS: '5' }).turn.recentTurns).toBe(3);
  });

  it('refuses what is not a whole number from 0, naming the setting and the value', () => {
    expect(() => resolveSettings(model, { recentTurns: -1 }, {})).toThrow(ConfigError);
    expect(() => resolveSettings(model, { recentTurns: 1.5 }, {})).toThrow(/setting recentTurns=1.5 is invalid/);
    expect(() => resolveSettings(model, {}, { WM_RECENT_TURNS: 'many' })).toThrow(
      /WM_RECENT_TURNS="many" is invalid: expected a whole number from 0/,
    );
    expect(() => resolveSettings(model, {}, { WM_RECENT_TURNS: '-2' })).toThrow(ConfigError);
  });

  it('the CLI reads it from flags > WM_RECENT_TURNS > config.json', () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-recent-'));
    try {
      writeFileSync(join(home, 'config.json'), JSON.stringify({ recentTurns: 2 }));
      expect(settingsOf(loadConfig({ home }, {})).recentTurns).toBe(2);
      expect(settingsOf(loadConfig({ home }, { WM_RECENT_TURNS: '0' })).recentTurns).toBe(0);
      expect(settingsOf(loadConfig({ home, 'recent-turns': '4' }, { WM_RECENT_TURNS: '0' })).recentTurns).toBe(4);
      expect(() => loadConfig({ home, 'recent-turns': 'x' }, {})).toThrow(/--recent-turns = "x" is invalid/);
      writeFileSync(join(home, 'config.json'), JSON.stringify({ recentTurns: -1 }));
      expect(() => loadConfig({ home }, {})).toThrow(/config\.json: recentTurns = -1 is invalid/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
