/**
 * The requests a session's trace tells, rebuilt as the visualizer's context view rebuilds
 * them: the system message by its hash, the history by its seqs, the tail on the last
 * message (and the memory block before it, with the memory after the history).
 */
import type { TraceRecord } from '../../src/trace/traceRecorder.js';

/** The messages of each request as the trace tells them (the context view does the same in the page). */
export function sentFromTrace(records: TraceRecord[]): { turn: number; request: number; messages: unknown[]; tokens: number[] }[] {
  const systems = new Map<string, string>();
  // With memoryPosition 'after-history': the memory block that opens the last message.
  const memories = new Map<string, string>();
  const bodies = new Map<number, { message: { content?: string | null }; tokens: number }>();
  const out: { turn: number; request: number; messages: unknown[]; tokens: number[] }[] = [];
  for (const r of records) {
    if (r.k === 'system') {
      systems.set(r.hash, r.content);
      if (r.memory !== undefined) memories.set(r.hash, r.memory);
    } else if (r.k === 'message') bodies.set(r.seq, { message: r.message, tokens: r.tokens });
    else if (r.k === 'request') {
      const seqs = r.seqs.flatMap(([first, n]) => Array.from({ length: n }, (_, i) => first + i));
      const history = seqs.map((seq) => bodies.get(seq)!);
      const last = history.at(-1)!;
      const memory = memories.get(r.system);
      const memoryTokens = [memory === undefined ? r.tokens.memory : 0, memory === undefined ? 0 : r.tokens.memory];
      out.push({
        turn: r.turn,
        request: r.request,
        messages: [
          { role: 'system', content: systems.get(r.system) },
          ...history.slice(0, -1).map((h) => h.message),
          { ...last.message, content: (memory ?? '') + (last.message.content ?? '') + r.tail },
        ],
        tokens: [
          r.tokens.system + memoryTokens[0]!,
          ...history.slice(0, -1).map((h) => h.tokens),
          last.tokens + r.tokens.tail + memoryTokens[1]!,
        ],
      });
    }
  }
  return out;
}
