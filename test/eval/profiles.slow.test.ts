/**
 * `workmem eval --model testing:<profile> --json` on the small suite, offline, for every
 * behaviour profile: each completes, they rank as the profiles say (diligent ≥ forgetful >
 * lazy on late-fact accuracy in workmem's arms; the full history sends more tokens than
 * workmem auto), the report names what it sees (lazy: the memory never maintained; eager:
 * the model compacting; sloppy: broken tool calls), and the gates exit 1 when missed.
 */
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/cliIO.js';
import { runCli } from '../../src/cli/main.js';
import type { ArmSummary, EvalResult } from '../../src/eval/index.js';
import { BEHAVIOUR_PROFILES, type BehaviourProfile } from '../../src/testing/index.js';
import { tempHome } from '../helpers.js';

const home = tempHome();

async function workmemEval(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => (err += d));
  const io = { stdin: process.stdin, stdout, stderr, env: { WORKMEM_HOME: home }, cwd: home } as unknown as CliIO;
  const code = await runCli(['eval', ...args], io);
  return { code, stdout: out, stderr: err };
}

const results = new Map<BehaviourProfile, EvalResult>();
const arm = (profile: BehaviourProfile, name: ArmSummary['arm']): ArmSummary => results.get(profile)!.summary.find((a) => a.arm === name)!;
const lateFacts = (profile: BehaviourProfile, name: ArmSummary['arm']): number => {
  const score = arm(profile, name).byCategory['early-fact']!;
  return score.right / score.asked;
};

describe('workmem eval with the behaviour profiles, on the small suite', () => {
  beforeAll(async () => {
    for (const profile of BEHAVIOUR_PROFILES) {
      const run = await workmemEval([
        '--model',
        `testing:${profile}`,
        '--suite',
        'small',
        '--json',
        '--results',
        join(home, `${profile}.jsonl`),
      ]);
      expect(run.code, `${profile}: ${run.stderr}`).toBe(0);
      results.set(profile, JSON.parse(run.stdout) as EvalResult);
    }
  }); // about 45 s on a quiet machine; minutes on a busy one

  it('completes on every profile, every arm playing every conversation', () => {
    for (const [profile, result] of results) {
      expect(result.model).toBe(`testing:${profile}`);
      expect(result.conversations.map((c) => c.arms.length)).toEqual([4, 4, 4]);
      expect(result.stopped).toBeUndefined();
    }
  });

  it('ranks them: diligent ≥ forgetful > lazy on late facts, in both workmem arms', () => {
    for (const name of ['workmem-auto', 'workmem-cache-aware'] as const) {
      const figures = `diligent ${lateFacts('diligent', name)}, forgetful ${lateFacts('forgetful', name)}, lazy ${lateFacts('lazy', name)}`;
      expect(lateFacts('diligent', name), `${name}: ${figures}`).toBeGreaterThanOrEqual(lateFacts('forgetful', name));
      expect(lateFacts('forgetful', name), `${name}: ${figures}`).toBeGreaterThan(lateFacts('lazy', name));
    }
  });

  it('the full history sends more input tokens than workmem auto, whatever the profile', () => {
    for (const profile of BEHAVIOUR_PROFILES) {
      const full = arm(profile, 'full-history').input;
      const auto = arm(profile, 'workmem-auto').input;
      expect(full, `${profile}: full history ${full}, workmem auto ${auto}`).toBeGreaterThan(auto);
    }
  });

  it('says what it sees: lazy never maintained its memory, eager compacts, sloppy breaks its tool calls', () => {
    const lazy = arm('lazy', 'workmem-auto');
    expect(lazy.findings).toContain('memory never maintained — phase 2 never began; the fallback carried the session');
    expect(lazy.phase2.every((p) => p.turn === null)).toBe(true);
    expect(lazy.heeded).toBe(0);
    expect(lazy.compactions.fallback).toBeGreaterThan(0);
    const diligent = arm('diligent', 'workmem-auto');
    expect(diligent.findings).toEqual([]);
    expect(diligent.heeded).toBe(diligent.reminders);
    const eager = arm('eager', 'workmem-auto');
    expect(eager.compactions.llm ?? 0, JSON.stringify(eager.compactions)).toBeGreaterThan(diligent.compactions.llm ?? 0);
    // Its calls under 20 % of the window compact nothing (compactHistoryFloor), and the finding says so.
    expect(eager.compactCalls!).toBeGreaterThan(eager.compactions.llm ?? 0);
    expect(eager.findings).toContainEqual(
      expect.stringMatching(/^the model asked to compact often: \d+ times in \d+ turns, \d+ of them compacted$/),
    );
    const sloppy = arm('sloppy', 'workmem-auto');
    expect(sloppy.toolErrors).toBeGreaterThan(0);
    expect(sloppy.textToolCalls).toBeGreaterThan(0);
    expect(sloppy.findings.join('\n')).toMatch(/tool calls? failed[\s\S]*written as text/);
    // A peer's broken calls are said too: what it never ran (the user's tools) is why it may cost less.
    for (const peer of ['full-history', 'summarise-75'] as const) {
      const broken = arm('sloppy', peer);
      expect(broken.toolErrors + broken.textToolCalls, peer).toBeGreaterThan(0);
      expect(broken.findings.join('\n'), peer).toMatch(/tool calls? failed|written as text/);
      expect(arm('diligent', peer).findings, peer).toEqual([]);
    }
    const forgetful = arm('forgetful', 'workmem-auto');
    expect(forgetful.writesPer10Turns!).toBeLessThan(diligent.writesPer10Turns!);
  });

  it('prints the markdown summary with the finding, and the gates exit 1 when missed', async () => {
    const again = (profile: BehaviourProfile, ...gate: string[]) =>
      workmemEval(['--model', `testing:${profile}`, '--suite', 'small', '--results', join(home, `${profile}.jsonl`), '--resume', ...gate]);
    const lazy = await again('lazy', '--min-accuracy', '80%');
    expect(lazy.code, lazy.stderr).toBe(1);
    expect(lazy.stdout).toContain('| peer: full history |');
    expect(lazy.stdout).toContain(
      '- workmem auto (phase 1 → 2): memory never maintained — phase 2 never began; the fallback carried the session',
    );
    expect(lazy.stdout).toMatch(/- MISSED: min-accuracy \d+\.\d % \(at least 80\.0 %\), workmem-auto/);
    expect(lazy.stderr).toContain('gates missed');
    const diligent = await again('diligent', '--min-accuracy', '0.8', '--max-tokens-ratio', '0.8');
    expect(diligent.code, diligent.stdout).toBe(0);
    expect(diligent.stdout).toMatch(/- passed: max-tokens-ratio 0\.\d{3} \(at most 0\.8\), workmem-auto/);
    const tight = await again('diligent', '--max-tokens-ratio', '0.1');
    expect(tight.code).toBe(1);
  });

  it("--layout plays workmem's arms under the seed's layout: what the default halves, at the same answers", async () => {
    const play = async (layout: string) => {
      const run = await workmemEval([
        '--model',
        'testing:forgetful',
        '--suite',
        'small',
        '--arms',
        'workmem-auto',
        '--json',
        '--overwrite',
        '--layout',
        layout,
      ]);
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as EvalResult).summary[0]!;
    };
    const seed = await play('seed');
    expect(seed.input, 'the default layout, run in beforeAll').not.toBe(arm('forgetful', 'workmem-auto').input);
    expect(seed.cached / seed.input).toBeLessThan(arm('forgetful', 'workmem-auto').cached / arm('forgetful', 'workmem-auto').input);
    expect(seed.accuracy.right).toBeLessThanOrEqual(arm('forgetful', 'workmem-auto').accuracy.right);
    expect((await play('default')).input).toBe(arm('forgetful', 'workmem-auto').input);
    const wrong = await workmemEval(['--model', 'testing:forgetful', '--suite', 'small', '--layout', 'roomy']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--layout "roomy": the layouts are default, seed, cheap');
  });
});
