/**
 * The usage a client is told: what the upstream reported for every call it made on the
 * client's behalf in one exchange (the first, those after workmem's tools ran, a retry after
 * an overflow was compacted), every count in it summed — `prompt_tokens_details`,
 * `completion_tokens_details` and whatever else the upstream counts — and what is not a count
 * as the last call said it. Nothing is estimated or added: a call the upstream reported no
 * usage for makes the whole exchange's usage unknown, and the client gets none.
 */
import { usageOf } from '../llm/streamAssembler.js';

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; [detail: string]: unknown };
  completion_tokens_details?: Record<string, unknown>;
  [field: string]: unknown;
}

export class UsageTotals {
  private sum: Record<string, unknown> | null = null;
  private calls = 0;
  private unknown = false;

  /** One call's usage as the upstream sent it (null: none). */
  add(usage: unknown): void {
    this.calls++;
    if (!usage || typeof usage !== 'object' || !usageOf(usage as never)) {
      this.unknown = true;
      return;
    }
    this.sum = summed(this.sum, usage as Record<string, unknown>);
  }

  /** Upstream calls made so far. */
  get count(): number {
    return this.calls;
  }

  wire(): WireUsage | null {
    if (this.unknown || this.calls === 0 || !this.sum) return null;
    const usage = this.sum as WireUsage;
    // The total is the sum of the parts, whether or not every upstream sent one.
    return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
  }
}

/** Counts added, details summed field by field; anything else (a string, a flag) as the later says. */
function summed(before: Record<string, unknown> | null, next: Record<string, unknown>): Record<string, unknown> {
  if (!before) return structuredClone(next);
  const out: Record<string, unknown> = { ...before };
  for (const [key, value] of Object.entries(next)) {
    const had = out[key];
    if (typeof value === 'number' && typeof had === 'number') out[key] = had + value;
    else if (isObject(value) && isObject(had)) out[key] = summed(had, value);
    else if (value !== null && value !== undefined) out[key] = isObject(value) ? structuredClone(value) : value;
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
