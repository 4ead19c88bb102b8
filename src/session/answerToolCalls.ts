/**
 * workmem's own tool calls in a host's loop, run as a Session runs them: the calls one answer
 * made of workmem's tools run together, in one tools pass and in the answer's order. Agent
 * loops (the AI SDK's, LangChain's) run each call of an answer on its own and at once; run
 * apart, a write followed by compact_history would leave the compaction's reminder standing,
 * where a Session's pass ends with the write and clears it. The first of an answer's calls
 * that the host runs starts the pass; the others take their results from it. A call that
 * comes before its answer is recorded (streamText runs a call as soon as its part streams)
 * waits for the answer.
 */
import type { ToolResult } from '../../machines/turnMachine.js';
import type { ToolCall } from '../history/messages.js';
import type { HostLoop } from './hostLoop.js';

export class AnswerToolCalls {
  /** The pass each pending call belongs to, started on first use. */
  private readonly pending = new Map<string, () => Promise<ToolResult[]>>();
  private recorded: Promise<void> = Promise.resolve();
  private release: (() => void) | null = null;

  constructor(private readonly loop: HostLoop) {}

  /** A model call is under way: the calls its answer makes are known once it is recorded. */
  calling(): void {
    this.release?.();
    this.recorded = new Promise((resolve) => (this.release = resolve));
  }

  /** The answer was recorded with these calls (none when the model call failed). */
  answered(calls: readonly ToolCall[]): void {
    const ours = calls.filter((c) => this.loop.isOwnTool(c.function.name));
    let pass: Promise<ToolResult[]> | null = null;
    for (const call of ours) this.pending.set(call.id, () => (pass ??= this.loop.runTools(ours)));
    this.release?.();
    this.release = null;
  }

  /** The result of one of workmem's calls, as the host's loop runs it. */
  async run(call: ToolCall): Promise<ToolResult> {
    await this.recorded;
    const pass = this.pending.get(call.id);
    this.pending.delete(call.id);
    const results = pass ? await pass() : await this.loop.runTools([call]);
    const result = results.find((r) => r.callId === call.id);
    if (!result) throw new Error(`workmem ran no call ${call.id}`);
    return result;
  }
}
