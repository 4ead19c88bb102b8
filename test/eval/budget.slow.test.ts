/**
 * The budget: a paid run stops before it would pass --max-cost, with the figures, and a
 * conversation's projection is never below what each arm really spends.
 */
import { describe, expect, it } from 'vitest';
import { builtInSuite, runEval, type Suite } from '../../src/eval/index.js';
import { projectedCost } from '../../src/eval/budget.js';
import { diligent, policyModel } from '../../src/testing/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';

const counter = await loadTokenCounter('gpt-4o');
const model = (): ReturnType<typeof policyModel> => policyModel(diligent(), { model: 'testing:diligent', counter });

describe('the budget', () => {
  const conversation = builtInSuite('small').conversations.slice(0, 1);
  const suite: Suite = { name: 'one', conversations: conversation };
  const prices = { 'testing:diligent': { input: 1000, cached: 100, output: 1000 } };
  // The whole conversation, unbudgeted, once for both tests.
  const free = runEval({ llm: model, model: 'testing:diligent', suite, prices });

  it('stops a run before it would pass --max-cost, and says so with the figures', async () => {
    expect((await free).spent!, 'the whole run costs more than the budget tried below').toBeGreaterThan(300);
    const capped = await runEval({ llm: model, model: 'testing:diligent', suite, prices, maxCost: 300 });
    expect(capped.stopped?.reason).toBe('budget');
    expect(capped.stopped?.message).toMatch(
      /^stopped before .+: \$\d+\.\d{4} spent of the \$300 budget, and it is projected to cost up to \$\d+\.\d{4} more$/,
    );
    expect(capped.spent!).toBeLessThanOrEqual(300);
    expect(capped.conversations).toEqual([]);
  });

  it('projects at least what each arm really spends', async () => {
    const result = await free;
    for (const arm of result.conversations[0]!.arms)
      expect(
        projectedCost(conversation[0]!, arm.arm, result.contextWindow, counter, prices['testing:diligent']),
        arm.arm,
      ).toBeGreaterThanOrEqual(arm.cost!);
  });

  it('needs a price for the model', async () => {
    await expect(runEval({ llm: model, suite, model: 'my-own-model', maxCost: 1 })).rejects.toThrow(
      /--max-cost needs a price for my-own-model/,
    );
  });
});
