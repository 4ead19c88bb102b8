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

/** What a host sent with one call: the elements of the log's host line its conversation stands for (hostLine.ts), from `from` on. */
export interface HostCallSent {
  turn: number;
  instructions: string | undefined;
  elements: readonly { readonly at: readonly number[] }[];
  /** The first of `elements` the conversation stands for (those before are older than it). */
  from: number;
  sent: number;
}

export class HostMessages {
  private readonly known = new Set<string>();
  private last: { text: string; hash: string } | null = null;

  records(call: HostCallSent, ts: number): HostRecord[] {
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
    let run: [number, number] | undefined;
    for (let e = call.from; e < call.elements.length; e++)
      for (const seq of call.elements[e]!.at) {
        if (run && run[0] + run[1] === seq) run[1]++;
        else seqs.push((run = [seq, 1]));
      }
    out.push({ k: 'host', ts, turn: call.turn, instructions: hash, seqs, sent: call.sent });
    return out;
  }
}
