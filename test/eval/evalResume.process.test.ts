/**
 * The built CLI interrupted with SIGINT mid-run: it exits 130 with the finished
 * conversations kept in its results file and says how to go on; `--resume` plays only the
 * others, and the totals are those of an uninterrupted run of the same deterministic
 * profile. Also its --help and its usage errors (exit 2). (Run `npm run build` first.)
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EvalResult } from '../../src/eval/index.js';
import { cliPath, runCli as cli } from '../cli/cliProcess.js';
import { tempHome } from '../helpers.js';
import { HANG_MS } from '../hangGuard.js';

const ARGS = ['eval', '--model', 'testing:forgetful', '--suite', 'small', '--json'];

/** The run without what differs between runs: wall times. */
function totals(result: EvalResult): unknown {
  return JSON.parse(JSON.stringify(result, (key, value: unknown) => (key === 'wallMs' ? undefined : value)));
}

const lines = (path: string): string[] => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []);

describe('workmem eval, interrupted and resumed', () => {
  it('SIGINT keeps the finished conversations; --resume gives the totals of an uninterrupted run', async () => {
    // Two arms of four: a conversation is kept or played again whole, whatever arms it has, and
    // the run is played three times here (whole, interrupted, resumed).
    const args = [...ARGS, '--arms', 'workmem-auto,full-history'];
    const home = tempHome();
    const env = { WORKMEM_HOME: home };
    const whole = await cli([...args, '--results', join(home, 'whole.jsonl')], { env, cwd: home });
    expect(whole.code, whole.stderr).toBe(0);

    const file = join(home, 'interrupted.jsonl');
    const child = spawn(process.execPath, [cliPath(), ...args, '--results', file], { env: { PATH: process.env.PATH, ...env }, cwd: home });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Once the first conversation is kept (the header and one line), Ctrl-C.
    const deadline = Date.now() + HANG_MS;
    while (lines(file).length < 2 && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(130);
    const kept = lines(file);
    expect(kept.length, 'the header and the finished conversations').toBeGreaterThanOrEqual(2);
    expect(kept.length, 'the run was stopped before its end').toBeLessThan(4);
    expect(stderr).toMatch(/interrupted: \d of 3 conversations finished; run the same command with --resume to go on/);

    const resumed = await cli([...args, '--results', file, '--resume'], { env, cwd: home });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('(resumed)');
    // The conversations finished before the interrupt were not played again: their lines are as they were.
    expect(lines(file).slice(0, kept.length)).toEqual(kept);
    expect(lines(file)).toHaveLength(4);
    expect(totals(JSON.parse(resumed.stdout) as EvalResult)).toEqual(totals(JSON.parse(whole.stdout) as EvalResult));
  });

  it('--resume refuses the results of another run', async () => {
    const home = tempHome();
    const file = join(home, 'one.jsonl');
    const first = await cli([...ARGS, '--limit', '1', '--arms', 'full-history', '--results', file], {
      env: { WORKMEM_HOME: home },
      cwd: home,
    });
    expect(first.code, first.stderr).toBe(0);
    const other = await cli([...ARGS, '--limit', '1', '--arms', 'summarise-75', '--results', file, '--resume'], {
      env: { WORKMEM_HOME: home },
      cwd: home,
    });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(
      `${file} holds another run (model testing:forgetful, suite small, window 16384, arms full-history); run without --resume to start over`,
    );
  });

  it('--help, and usage errors exit 2', async () => {
    const help = await cli(['eval', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^workmem eval \[--model <name> \| --model testing:<profile>\]/);
    expect(help.stdout).toContain('--max-cost <dollars>');
    for (const [args, message] of [
      [
        ['--model', 'testing:clever'],
        'no such profile; the profiles are testing:diligent, testing:lazy, testing:forgetful, testing:eager, testing:sloppy',
      ],
      [['--model', 'testing:lazy', '--suite', 'huge'], 'the suites are full and small'],
      [['--model', 'testing:lazy', '--min-accuracy', '1.5'], 'give a share from 0 to 1 (0.8) or a percentage (80%)'],
      [
        ['--model', 'testing:lazy', '--arms', 'workmem-auto,mine'],
        'the arms are workmem-auto, workmem-cache-aware, full-history, summarise-75',
      ],
      [['--model', 'testing:lazy', '--max-cost', '1', '--prices', '/nonexistent.json'], '--prices /nonexistent.json'],
      [['--model', 'testing:lazy', '--bogus'], 'unknown option --bogus'],
      [['--model', 'testing:lazy', '--suite', 'small', '--longmemeval', 'x.json'], 'give it or --suite, not both'],
    ] as const) {
      const run = await cli(['eval', ...args], { env: { WORKMEM_HOME: tempHome() } });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(message);
    }
  });
});

describe('workmem eval: a results file it can trust, and no conversation left behind in the temporary folder', () => {
  it('--resume checks every line: null, arms that are not a list, a conversation twice each stop it (exit 2), nothing computed', async () => {
    const home = tempHome();
    const file = join(home, 'one.jsonl');
    const args = [...ARGS, '--limit', '1', '--arms', 'full-history', '--results', file];
    const first = await cli(args, { env: { WORKMEM_HOME: home }, cwd: home });
    expect(first.code, first.stderr).toBe(0);
    const [header, result] = lines(file);
    for (const [body, problem] of [
      [[header, result, 'null'], "line 3, is null, not a conversation's result"],
      [[header, JSON.stringify({ ...JSON.parse(result!), arms: 'x' })], 'line 2, has no turns count or arms list (arms "x")'],
      [[header, result, result], `line 3, lists conversation ${JSON.parse(result!).id} a second time`],
      [[header, JSON.stringify({ ...JSON.parse(result!), id: 'elsewhere' })], 'line 2, names no conversation of this run (id "elsewhere")'],
      [[header, '{"id": "cut', result], 'line 2, is not JSON'],
    ] as const) {
      writeFileSync(file, `${body.join('\n')}\n`);
      const resumed = await cli([...args, '--resume'], { env: { WORKMEM_HOME: home }, cwd: home });
      expect(resumed.code, problem).toBe(2);
      expect(resumed.stderr).toContain(`${file}, ${problem}: nothing was computed`);
      expect(resumed.stdout).toBe('');
    }
    // Only the last line may be cut short (by a kill): it is dropped and its conversation played again.
    writeFileSync(file, `${[header, '{"id": "cut'].join('\n')}\n`);
    expect((await cli([...args, '--resume'], { env: { WORKMEM_HOME: home }, cwd: home })).code).toBe(0);
  });

  it('a run anew does not empty a file of finished conversations unless --overwrite says so', async () => {
    const home = tempHome();
    const file = join(home, 'one.jsonl');
    const args = [...ARGS, '--limit', '1', '--arms', 'full-history', '--results', file];
    expect((await cli(args, { env: { WORKMEM_HOME: home }, cwd: home })).code).toBe(0);
    const kept = readFileSync(file, 'utf8');
    const again = await cli(args, { env: { WORKMEM_HOME: home }, cwd: home });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      `${file} holds 1 finished conversation of an earlier run: --resume goes on from them, --overwrite starts over, --results <file> keeps them`,
    );
    expect(readFileSync(file, 'utf8')).toBe(kept);
    const over = await cli([...args, '--overwrite'], { env: { WORKMEM_HOME: home }, cwd: home });
    expect(over.code, over.stderr).toBe(0);
    expect(lines(file)).toHaveLength(2);
  });

  it("a killed eval's temporary homes (the conversations' text) go: at once on SIGTERM, at the next start after SIGKILL", async () => {
    const home = tempHome();
    const tmp = tempHome();
    const env = { PATH: process.env.PATH, WORKMEM_HOME: home, TMPDIR: tmp };
    const homes = (): string[] => readdirSync(tmp).filter((n) => n.startsWith('workmem-eval-'));
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      const child = spawn(process.execPath, [cliPath(), ...ARGS, '--arms', 'workmem-auto', '--overwrite'], { env, cwd: home });
      child.stdout.resume();
      child.stderr.resume();
      const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
      // Killed once a session home holds its files.
      while (!homes().some((h) => readdirSync(join(tmp, h)).length)) await new Promise((r) => setTimeout(r, 50));
      child.kill(signal);
      const code = await closed;
      if (signal === 'SIGTERM') {
        expect(code).toBe(130);
        expect(homes()).toEqual([]);
      } else {
        expect(homes()).toHaveLength(1); // nothing could remove it
        const next = await cli([...ARGS, '--limit', '1', '--arms', 'full-history', '--results', join(home, 'next.jsonl')], {
          env,
          cwd: home,
        });
        expect(next.code, next.stderr).toBe(0);
        expect(homes()).toEqual([]);
      }
    }
  });
});
