/**
 * A benchmark gives an arm the same figures whatever runs beside it: each arm played alone
 * sends, is served from the cache, writes and answers exactly what it does after the other
 * arms in one run, through the stand-in models `workmem eval --model testing:<profile>` uses
 * (one server per conversation and arm, the sessions on the eval's own clock).
 */
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ARM_NAMES, builtInSuite, markdownReport, runEval, type ArmName, type ArmResult, type Suite } from '../../src/eval/index.js';
import { readLog } from '../../src/storage/messageLog.js';
import { testingModels } from '../../src/eval/testingModel.js';

// Two conversations: the second conversation's arms run after the first's, all four.
const suite: Suite = { name: 'two', conversations: builtInSuite('small').conversations.slice(0, 2) };
const prices = { 'testing:diligent': { input: 0.25, cached: 0.025, output: 2 } };

async function run(arms: readonly ArmName[], contextWindow?: number) {
  const models = testingModels('diligent', 'testing:diligent', 'automatic');
  try {
    return await runEval({
      llm: () => models.next(),
      model: 'testing:diligent',
      suite,
      arms,
      prices,
      ...(contextWindow ? { contextWindow } : {}),
    });
  } finally {
    await models.close();
  }
}

/** An arm's figures: all but its wall time and where a failed conversation's session was kept. */
function figures(arm: ArmResult): Omit<ArmResult, 'wallMs' | 'keptSession'> {
  const { wallMs: _wall, keptSession: _kept, ...rest } = arm;
  return rest;
}

describe('arms are independent', () => {
  it('each arm alone gives exactly the figures it gives after the others, conversation by conversation', async () => {
    const together = await run(ARM_NAMES);
    for (const arm of ARM_NAMES) {
      const alone = await run([arm]);
      for (const [i, conversation] of alone.conversations.entries()) {
        const beside = together.conversations[i]!.arms.find((a) => a.arm === arm)!;
        expect(figures(conversation.arms[0]!), `${arm} on ${conversation.id}`).toEqual(figures(beside));
      }
      expect(alone.summary[0]!.cost).toBe(together.summary.find((s) => s.arm === arm)!.cost);
    }
    // Not vacuous: the workmem arms wrote memory and the cache served them.
    const auto = together.summary.find((s) => s.arm === 'workmem-auto')!;
    expect(auto.cached).toBeGreaterThan(0);
    expect(auto.writesPer10Turns).toBeGreaterThan(0);
  });
});

describe('failed turns', () => {
  it('are reported each with its status and error, and a failed conversation keeps its session for the user to open', async () => {
    // A window too small for the memory this conversation grows: once nothing more can be compacted, turns fail.
    const result = await run(['workmem-auto'], 8192);
    const arm = result.summary[0]!;
    expect(arm.failedTurns.length).toBeGreaterThan(0);
    for (const failed of arm.failedTurns) {
      expect(failed.status).toBe('failed');
      expect(failed.error?.kind).toBe('window');
      expect(failed.error?.message).toMatch(/more than the 8192-token window/);
    }
    const report = markdownReport(result);
    const first = arm.failedTurns[0]!;
    expect(report).toContain(`${first.conversation} turn ${first.turn + 1}: failed: window: ${first.error!.message}`);
    // The sessions of the conversations with failed turns are kept, named in the report, and hold the conversation.
    const failedIn = new Set(arm.failedTurns.map((f) => f.conversation));
    expect(arm.keptSessions).toHaveLength(failedIn.size);
    try {
      for (const dir of arm.keptSessions) {
        expect(report).toContain(`its session is kept in ${dir}`);
        expect(existsSync(dir)).toBe(true);
        expect(readLog(join(dir, 'messages.jsonl')).entries.length).toBeGreaterThan(0);
      }
    } finally {
      for (const dir of arm.keptSessions) rmSync(dirname(dirname(dirname(dir))), { recursive: true, force: true });
    }
  });
});
