/** Faults the test server injects on demand: what a real server or network does wrong. */
import type { ChatRequest } from './wire.js';

export type Fault =
  /** Wait before answering. */
  | { type: 'latency'; ms: number }
  /** 429 with a retry-after header (seconds; null: none), and any other headers (`retry-after-ms`, `x-should-retry`). */
  | { type: 'rate_limit'; retryAfterSeconds?: number | null; headers?: Record<string, string> }
  /** An HTTP error status, 500 by default, with any headers and the error's message (default: OpenAI's for a 500). */
  | { type: 'server_error'; status?: number; headers?: Record<string, string>; message?: string }
  /** 400 context_length_exceeded, as OpenAI sends it. */
  | { type: 'context_length' }
  /** The connection is cut after this many SSE chunks. */
  | { type: 'reset'; afterChunks?: number }
  /** The stream ends cleanly after this many chunks, without a finish reason or [DONE]. */
  | { type: 'truncate'; afterChunks?: number }
  /** A non-JSON SSE event after this many chunks. */
  | { type: 'garbage'; afterChunks?: number; data?: string }
  /** A pause of `ms` after this many chunks. */
  | { type: 'stall'; afterChunks?: number; ms: number }
  /** The first tool call's arguments are cut in half (a tool call is added if there is none). */
  | { type: 'malformed_tool_json' }
  /** No content and no tool calls. */
  | { type: 'empty' }
  /** An unusual finish reason. */
  | { type: 'finish_reason'; value: string }
  /** The SSE bytes damaged at random, reproducibly by seed (see streamCorruption.ts). */
  | { type: 'corrupt'; seed: number }
  /** Text deltas (`text`, default "all work and no play ") forever, as fast as the client reads, until it hangs up. */
  | { type: 'endless'; text?: string }
  /**
   * After the role chunk, keep-alives every `everyMs` and nothing else, until the client hangs
   * up: chunks with no choice (`choices: []`, the default), chunks whose delta is empty
   * (`as: 'delta'`), or SSE comments (`as: 'comment'`, `: ping`).
   */
  | { type: 'keepalive'; everyMs: number; as?: 'empty' | 'delta' | 'comment' }
  /** The answer through its finish chunk, then that finish chunk alone (`delta: {}`) every `everyMs`, no usage, no [DONE], until the client hangs up. */
  | { type: 'finish_flood'; everyMs: number }
  /** After the role chunk, `chunks` reasoning deltas (`reasoning_content`) `everyMs` apart, then the answer. */
  | { type: 'thinking'; chunks: number; everyMs: number };

/** Faults by request index (an entry may be null, one fault or several), or a function deciding them. */
export type FaultPlan =
  readonly (Fault | readonly Fault[] | null)[] | ((index: number, request: ChatRequest) => Fault | readonly Fault[] | null);
