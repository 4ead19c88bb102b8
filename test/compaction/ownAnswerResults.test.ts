/**
 * compact_history called beside other calls of the same answer: their results, which the
 * model has not seen yet, are neither moved nor counted among the outputs kept. A Session
 * (which has logged them when compact_history runs) and a host's loop (which has not) plan
 * the same compaction.
 */
import { describe, expect, it } from 'vitest';
import { planForTarget } from '../../src/compaction/plan.js';
import { fromItems, type HistoryItem } from '../../src/history/historyView.js';
import type { ChatMessage } from '../../src/history/messages.js';

const call = (id: string, name: string) => ({ id, type: 'function' as const, function: { name, arguments: '{}' } });

function items(withOwnResult: boolean): HistoryItem[] {
  const messages: [ChatMessage, number][] = [
    [{ role: 'user', content: 'weather twice, then keep notes' }, 10],
    [{ role: 'assistant', content: null, tool_calls: [call('a', 'weather')] }, 10],
    [{ role: 'tool', tool_call_id: 'a', content: 'report A '.repeat(100) }, 300],
    [{ role: 'assistant', content: null, tool_calls: [call('b', 'weather')] }, 10],
    [{ role: 'tool', tool_call_id: 'b', content: 'report B '.repeat(100) }, 300],
    [{ role: 'assistant', content: null, tool_calls: [call('c', 'write'), call('d', 'compact_history')] }, 20],
  ];
  if (withOwnResult) messages.push([{ role: 'tool', tool_call_id: 'c', content: 'Wrote overview.md '.repeat(20) }, 100]);
  return messages.map(([message, tokens], seq) => ({ seq, turn: 1, message, tokens }));
}

describe("compact_history and its own answer's results", () => {
  it('plans the same whether the results of its answer are logged or not, and moves none of them', () => {
    const logged = planForTarget(fromItems(items(true)), 1, 'tools', 1);
    const notYet = planForTarget(fromItems(items(false)), 1, 'tools', 1);
    expect(logged).toEqual(notYet);
    // The older of the two reports moves; the newer is the one kept; the write's result stays.
    expect(logged.stubs).toEqual([2]);
  });
});
