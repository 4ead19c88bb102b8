import { describe, expect, it } from 'vitest';
import { HostMessages } from '../../src/trace/hostMessages.js';

describe("the trace's record of what a host sent", () => {
  it('names the log messages its conversation stands for as runs of seqs, from the first element it holds', () => {
    const elements = [{ at: [0] }, { at: [1, 2] }, { at: [3] }, { at: [5] }, { at: [6, 7] }, { at: [9] }];
    const records = new HostMessages().records({ turn: 4, instructions: 'Be brief.', elements, from: 1, sent: 7 }, 10);
    expect(records).toEqual([
      { k: 'instructions', ts: 10, hash: expect.any(String), content: 'Be brief.' },
      {
        k: 'host',
        ts: 10,
        turn: 4,
        instructions: records[0]!.k === 'instructions' ? records[0]!.hash : null,
        seqs: [
          [1, 3],
          [5, 3],
          [9, 1],
        ],
        sent: 7,
      },
    ]);
  });

  it('writes the instructions once and names them by hash after', () => {
    const host = new HostMessages();
    const call = { turn: 1, instructions: 'Be brief.', elements: [{ at: [0] }], from: 0, sent: 2 };
    const [first] = host.records(call, 1);
    const again = host.records({ ...call, turn: 2 }, 2);
    expect(again).toEqual([
      { k: 'host', ts: 2, turn: 2, instructions: first!.k === 'instructions' ? first!.hash : 'missing', seqs: [[0, 1]], sent: 2 },
    ]);
    expect(host.records({ ...call, instructions: undefined }, 3)).toEqual([
      { k: 'host', ts: 3, turn: 1, instructions: null, seqs: [[0, 1]], sent: 2 },
    ]);
  });
});
