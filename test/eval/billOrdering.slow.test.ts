/**
 * The small suite's bill, in order, under both price models providers use: OpenAI's
 * automatic prefix caching (cached reads at 10 %, writes free) and Anthropic's explicit
 * caching (breakpoints as cache_control, writes at 1.25 ×, reads at 10 %), at gpt-5-mini's
 * prices: the peers, the default, and the seed's layout (SEED_LAYOUT). Token counts are
 * deterministic (one stand-in server per conversation and arm): this is not a timing test.
 * The bounds: the default at most 1.1 × (automatic) and 1.2 × (explicit) the cheapest peer's
 * bill, which the figures docs/eval.md reports meet with a little room.
 */
import { describe, expect, it } from 'vitest';
import { SEED_LAYOUT, runEval, type ArmName } from '../../src/eval/index.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import { testingModels } from '../../src/eval/testingModel.js';
import type { PromptCaching } from '../../src/testing/index.js';

const PRICE = { input: 0.25, cached: 0.025, output: 2 };

async function bills(caching: Exclude<PromptCaching, 'off'>, arms?: ArmName[], settings?: SettingsOverrides) {
  const models = testingModels('diligent', 'testing:diligent', caching);
  const price = caching === 'explicit' ? { ...PRICE, cacheWrite: 0.3125 } : PRICE;
  try {
    const result = await runEval({
      llm: () => models.next(),
      model: 'testing:diligent',
      suite: 'small',
      prices: { 'testing:diligent': price },
      ...(arms ? { arms } : {}),
      ...(settings ? { settings } : {}),
    });
    return (arm: ArmName) => result.summary.find((s) => s.arm === arm)!;
  } finally {
    await models.close();
  }
}

describe("the small suite's bill", () => {
  it.each([
    ['automatic', 1.1],
    ['explicit', 1.2],
  ] as const)(
    "%s caching: the default at most %s × the cheapest peer and about half the seed's layout, at the same answers; the peers in their order",
    async (caching, most) => {
      const arm = await bills(caching);
      const seed = (await bills(caching, ['workmem-auto'], SEED_LAYOUT))('workmem-auto');
      const auto = arm('workmem-auto');
      const cheapest = Math.min(arm('full-history').cost!, arm('summarise-75').cost!);
      for (const name of ['workmem-auto', 'full-history', 'summarise-75'] as const)
        expect(arm(name).accuracy, name).toEqual({ right: 36, asked: 36 });
      expect(seed.accuracy).toEqual({ right: 36, asked: 36 });
      expect(arm('summarise-75').cost!).toBeLessThanOrEqual(arm('full-history').cost!);
      expect(auto.cost! / cheapest).toBeLessThanOrEqual(most);
      expect(auto.cost!).toBeLessThan(0.6 * seed.cost!);
      expect(auto.costRatio).toBeCloseTo(auto.cost! / cheapest, 10);
      // Both send far less than the full history; the default has the cache serve most of it.
      expect(auto.input).toBeLessThan(0.6 * arm('full-history').input);
      expect(seed.input).toBeLessThan(0.6 * arm('full-history').input);
      expect(auto.cached / auto.input).toBeGreaterThan(0.7);
      // Writes are reported (and billed) where the provider charges for them, and only there.
      if (caching === 'explicit') expect(auto.cacheWrite).toBeGreaterThan(0);
      else expect(auto.cacheWrite).toBe(0);
    },
  );
});
