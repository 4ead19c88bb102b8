/**
 * The conversation every door of workmem is driven through (issue 26): 40 turns, facts
 * early and questions late, a host tool of the service's own, and one output of it so large
 * that the next request would pass 75 % of the window (the system's fallback compaction runs
 * first). In a 6,000-token window the protocol follower writes its memory from the first
 * turn (phase 2 starts there) and calls compact_history once the requests pass 40 %.
 */
import { z } from 'zod';
import { defineTool } from '../../src/tools/tool.js';

export const INSTRUCTIONS = 'You help with a garden.';
export const WINDOW = 6000;
export const RESERVE = 500;
/**
 * Every door must send the same bytes, so the fallback summarises when it compacts: a summary
 * prepared in the background lands when its request returns, which no two runs share
 * (background compaction in each door has tests of its own).
 */
export const settings = { contextWindow: WINDOW, reserveOutputTokens: RESERVE, backgroundThreshold: false as const };
/** One clock for every door: archive names carry the time. */
export const now = (): number => Date.UTC(2026, 10, 25, 12);

/** The host's own tool; asked for a report it returns ~2,400 tokens, about 40 % of the window. */
export const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ input: z.string() }),
  execute: async ({ input }) =>
    input.startsWith('report')
      ? `Report for ${input}. ${'Detailed station readings, hour by hour. '.repeat(420)}`
      : `Sunny in ${input}. ${'Long forecast text. '.repeat(40)}`,
});

/** The host tool's answer, as every door's own tool returns it. */
export const weatherText = async (input: string): Promise<string> => String(await weather.execute({ input }, {} as never));

export function prompts(): string[] {
  const out: string[] = [];
  for (let i = 1; i <= 10; i++) out.push(`My plant${i} is rose${i}.`);
  for (let i = 1; i <= 6; i++) out.push(`Use the weather tool with city${i}.`);
  out.push('Use the weather tool with report1.');
  for (let i = 1; i <= 13; i++) out.push(`Small talk number ${i}: ${'the weather is mild, '.repeat(30)}`);
  for (let i = 1; i <= 10; i++) out.push(`What is my plant${i}?`);
  return out;
}
