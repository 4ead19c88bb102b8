/**
 * What a host's loop sent with each model call (the proxy's client, the AI SDK's loop), for
 * the visualizer's context view beside what went upstream: a `host` record per call names
 * the log messages the host's conversation stands for, by runs of seqs (their bodies are the
 * trace's `message` records), and its instructions by a hash, whose text an `instructions`
 * record holds once. The host holds workmem's own tool exchanges folded into its answers
 * (hostLine.ts): their seqs are listed too, and the page marks them.
 */
import { createHash } from 'node:crypto';

export type HostRecord =
  | { k: 'instructions'; ts: number; hash: string; content: string }
  | {
      k: 'host';
      ts: number;
      turn: number;
      /** The hash of the host's system messages, or null when it sent none. */
      instructions: string | null;
      /** The log messages its conversation stands for, as runs [first seq, count] in order. */
      seqs: [number, number][];
      /** How many messages it sent (its system messages included). */
      sent: number;
    };

export class HostMessages {
  private readonly known = new Set<string>();
  private last: { text: string; hash: string } | null = null;

  records(call: { turn: number; instructions: string | undefined; seqs: readonly number[]; sent: number }, ts: number): HostRecord[] {
    const out: HostRecord[] = [];
    let hash: string | null = null;
    if (call.instructions !== undefined) {
      if (this.last?.text !== call.instructions)
        this.last = { text: call.instructions, hash: createHash('sha256').update(call.instructions).digest('base64url').slice(0, 16) };
      hash = this.last.hash;
      if (!this.known.has(hash)) {
        this.known.add(hash);
        out.push({ k: 'instructions', ts, hash, content: call.instructions });
      }
    }
    const seqs: [number, number][] = [];
    for (const seq of call.seqs) {
      const run = seqs.at(-1);
      if (run && run[0] + run[1] === seq) run[1]++;
      else seqs.push([seq, 1]);
    }
    out.push({ k: 'host', ts, turn: call.turn, instructions: hash, seqs, sent: call.sent });
    return out;
  }
}
