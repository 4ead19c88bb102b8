/** A turn's token usage, summed over its requests (the server's counts, as turn_end reports them). */
import type { TokenUsage } from '../src/events.js';

/** Two token counts added up (the first may be missing). */
export function sumUsage(a: TokenUsage | null | undefined, b: TokenUsage): TokenUsage {
  return a ? { input: a.input + b.input, cached: a.cached + b.cached, output: a.output + b.output } : b;
}
