/**
 * Where a request's explicit cache breakpoints go (Anthropic's cache_control, Bedrock's
 * cachePoint): the request says where its stable parts end (LLMRequest.cacheBreakpoints); a
 * provider allows 4, and the last ones are kept (each covers all before it).
 */
import type { CacheBreakpoint } from './llm.js';

/** Anthropic allows 4 cache_control breakpoints per request. */
export const MAX_BREAKPOINTS = 4;

/** Breakpoints by message, as cut points in its text (in order); at most MAX_BREAKPOINTS. */
export function breakpointsOf(breakpoints: readonly CacheBreakpoint[], messages: readonly { role: string }[]): Map<number, number[]> {
  // A tool result is not cut (its output is one block): a cut inside it marks the message before it instead.
  const placed = breakpoints.map((b) =>
    b.chars !== undefined && messages[b.message]?.role === 'tool' && b.message > 0 ? { message: b.message - 1 } : b,
  );
  const valid = placed.filter((b) => Number.isInteger(b.message) && b.message >= 0 && b.message < messages.length).slice(-MAX_BREAKPOINTS);
  const byMessage = new Map<number, number[]>();
  for (const b of valid) byMessage.set(b.message, [...(byMessage.get(b.message) ?? []), b.chars ?? Number.MAX_SAFE_INTEGER]);
  for (const cuts of byMessage.values()) cuts.sort((a, b) => a - b);
  return byMessage;
}
