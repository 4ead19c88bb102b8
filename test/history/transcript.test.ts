/**
 * An archive's transcript, rendered a slice at a time: the same text as rendered at once,
 * and the event loop turns while a large one is rendered (a 20k-message conversation's
 * archive held `workmem serve` ~90 ms in one piece).
 */
import { describe, expect, it } from 'vitest';
import type { HistoryItem } from '../../src/history/historyView.js';
import { renderTranscript, renderTranscriptInSlices } from '../../src/history/transcript.js';

/** Items of every role, several to a turn, with fences inside their text. */
function items(n: number): HistoryItem[] {
  return Array.from({ length: n }, (_, i): HistoryItem => {
    const turn = 1 + Math.floor(i / 4);
    if (i % 4 === 0) return { seq: i, turn, message: { role: 'user', content: `question ${i} \`\`\`quoted\`\`\`` }, tokens: 5 };
    if (i % 4 === 1)
      return {
        seq: i,
        turn,
        message: {
          role: 'assistant',
          content: i % 8 === 1 ? null : `calling ${i}`,
          tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'lookup', arguments: `{"n":${i}}` } }],
        },
        tokens: 7,
      };
    if (i % 4 === 2) return { seq: i, turn, message: { role: 'tool', tool_call_id: `call_${i - 1}`, content: `result ${i}` }, tokens: 3 };
    return { seq: i, turn, message: { role: 'assistant', content: `answer ${i}` }, tokens: 3 };
  });
}

describe('renderTranscriptInSlices', () => {
  it('renders what renderTranscript does, at every slice boundary', async () => {
    const all = items(1200);
    for (const n of [0, 1, 4, 255, 256, 257, 513, 1200]) {
      const at = all.slice(0, n);
      expect(await renderTranscriptInSlices('Archived conversation', 'Verbatim.', at)).toBe(
        renderTranscript('Archived conversation', 'Verbatim.', at),
      );
    }
  });

  it('lets the event loop turn while a large archive is rendered', async () => {
    let turned = false;
    setImmediate(() => (turned = true));
    // Rendered at once, 20k items hold the loop far longer than a slice's budget (1 ms).
    const all = items(20_000);
    const text = await renderTranscriptInSlices('Archived conversation', 'Verbatim.', all);
    expect(turned).toBe(true);
    expect(text).toContain('## Turn 5000');
  });
});
