/** The progress bar: on a terminal one line with the share done, where the run is and an ETA from its pace; off a terminal nothing. */
import { describe, expect, it } from 'vitest';
import { duration, progressBar } from '../../src/cli/evalProgress.js';

function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const s = { isTTY, columns: 200, text: '', write: (t: string) => ((s.text += t), true) };
  return s as unknown as NodeJS.WriteStream & { text: string };
}

describe('the progress bar', () => {
  it('draws the share done, the conversation, the arm, the turn and an ETA, then clears its line', () => {
    let now = 1_000;
    const out = stream(true);
    const bar = progressBar(out, () => now);
    now += 30_000;
    bar.update({ conversation: 'thesis', index: 1, conversations: 8, arm: 'full-history', turn: 9, done: 250, total: 1000 });
    expect(out.text).toBe('\r\u001b[2K[######------------------] 25 % · thesis (2/8) · full-history · turn 10 · ETA 1m 30s');
    now += 100; // within 200 ms: not redrawn
    bar.update({ conversation: 'thesis', index: 1, conversations: 8, arm: 'full-history', turn: 10, done: 251, total: 1000 });
    expect(out.text.split('\r').length, 'drawn once').toBe(2);
    bar.clear();
    expect(out.text.endsWith('\r\u001b[2K')).toBe(true);
  });

  it('draws nothing off a terminal', () => {
    const out = stream(false);
    const bar = progressBar(out);
    bar.update({ conversation: 'x', index: 0, conversations: 1, arm: 'workmem-auto', turn: 0, done: 0, total: 1 });
    bar.clear();
    expect(out.text).toBe('');
  });

  it('writes durations as people read them', () => {
    expect(duration(9_400)).toBe('9s');
    expect(duration(95_000)).toBe('1m 35s');
  });
});
