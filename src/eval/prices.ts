/**
 * What tokens cost: a price table (US dollars per million tokens: input, cached input,
 * input written to the cache, output) with defaults for a few well-known models, which a
 * JSON file of the same shape extends or overrides (`--prices FILE`). A bill is computed
 * from the server's usage.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../settings/config.js';

/** One model's prices, in US dollars per million tokens. */
export interface Price {
  input: number;
  /** Input tokens read from the provider's prompt cache (default: the input price). */
  cached?: number;
  /**
   * Input tokens written to the provider's prompt cache (default: the input price): where a
   * provider charges for writes, as Anthropic does (1.25 × input for its 5-minute cache).
   */
  cacheWrite?: number;
  output: number;
}

/** The tokens a bill is made of: input (cached and cache-written included) and output. */
export interface BilledTokens {
  input: number;
  /** Of input, read from the cache. */
  cached: number;
  /** Of input, written to the cache (0 where the provider reports none). */
  cacheWrite?: number;
  output: number;
}

/** Prices by model name. */
export type PriceTable = Record<string, Price>;

/**
 * Published list prices when this table was written (check your provider's page: prices
 * change). Anthropic's cache writes are its 5-minute ones (1.25 × input).
 */
export const DEFAULT_PRICES: PriceTable = {
  'gpt-4o-mini': { input: 0.15, cached: 0.075, output: 0.6 },
  'gpt-4o': { input: 2.5, cached: 1.25, output: 10 },
  'gpt-4.1': { input: 2, cached: 0.5, output: 8 },
  'gpt-4.1-mini': { input: 0.4, cached: 0.1, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, cached: 0.025, output: 0.4 },
  'gpt-5': { input: 1.25, cached: 0.125, output: 10 },
  'gpt-5-mini': { input: 0.25, cached: 0.025, output: 2 },
  'gpt-5-nano': { input: 0.05, cached: 0.005, output: 0.4 },
  'claude-sonnet-4-5': { input: 3, cached: 0.3, cacheWrite: 3.75, output: 15 },
  'claude-haiku-4-5': { input: 1, cached: 0.1, cacheWrite: 1.25, output: 5 },
  'claude-opus-4-1': { input: 15, cached: 1.5, cacheWrite: 18.75, output: 75 },
  // The built-in test server's profiles cost nothing.
  testing: { input: 0, cached: 0, output: 0 },
};

const PriceSchema = z
  .object({
    input: z.number().min(0),
    cached: z.number().min(0).optional(),
    cacheWrite: z.number().min(0).optional(),
    output: z.number().min(0),
  })
  .strict();
const TableSchema = z.record(z.string().min(1), PriceSchema);

/** The default table with a JSON file's entries over it. */
export function loadPrices(path: string | undefined): PriceTable {
  if (!path) return DEFAULT_PRICES;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`--prices ${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = TableSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `--prices ${path}: ${issue.path.join('.') || 'the file'}: ${issue.message} (expected {"model": {"input": 0.15, "cached": 0.075, "cacheWrite": 0.1875, "output": 0.6}}, dollars per million tokens; cached and cacheWrite optional)`,
    );
  }
  return { ...DEFAULT_PRICES, ...(parsed.data as PriceTable) };
}

/**
 * A model's price: by its exact name, else by the longest name in the table that it starts
 * with (gpt-4o-mini-2024-07-18 → gpt-4o-mini), after any provider prefix (openai/…) and
 * `testing:` profile; undefined when none fits.
 */
export function priceOf(table: PriceTable, model: string): Price | undefined {
  const names = [model, model.replace(/^[^/]*\//, ''), model.replace(/:.*$/, '')];
  for (const name of names) if (table[name]) return table[name];
  const bare = names[1]!;
  const prefix = Object.keys(table)
    .filter((key) => bare.startsWith(key))
    .sort((a, b) => b.length - a.length)[0];
  return prefix ? table[prefix] : undefined;
}

/** Dollars for input tokens (of which `cached` read from the cache and `cacheWrite` written to it) and output tokens. */
export function costOf(price: Price, input: number, cached: number, output: number, cacheWrite = 0): number {
  const plain = Math.max(0, input - cached - cacheWrite);
  return (
    (plain * price.input +
      cached * (price.cached ?? price.input) +
      cacheWrite * (price.cacheWrite ?? price.input) +
      output * price.output) /
    1_000_000
  );
}

/** costOf over a tally of tokens. */
export function billOf(price: Price, tokens: BilledTokens): number {
  return costOf(price, tokens.input, tokens.cached, tokens.output, tokens.cacheWrite ?? 0);
}
