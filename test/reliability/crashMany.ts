/**
 * Crash safety with many sessions in flight: one process runs turns on 100 sessions of one
 * home at once (crashManyChild.ts), their writes and syncs in flight together on the disk
 * threads, and is killed with SIGKILL at a random moment. Then every session is opened and
 * checked as crash.ts checks one: every acknowledged message in the log unchanged,
 * overview.md one of the contents it was given, the history a valid message list; and a new
 * turn works on a few of them. Trials follow one another on the same sessions.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { createSession, openSession } from '../../src/session/index.js';
import { historyProblems, logEntriesOf } from './checks.js';
import { sha } from './hash.js';
import { builtFile } from './built.js';
import { Tally, type FamilyResult } from './report.js';

const FAULT = 'SIGKILL at a random moment, 100 sessions in flight in one process';

export async function crashManyTrials(trials: number, sessions = 100, seed = 1): Promise<FamilyResult> {
  const tally = new Tally('crash (SIGKILL)');
  const home = mkdtempSync(join(tmpdir(), 'workmem-crash-many-'));
  const quiet = scriptedModel(() => ({ text: 'ok' }));
  const ids: string[] = [];
  const dirs: string[] = [];
  for (let i = 0; i < sessions; i++) {
    const s = await createSession({ llm: quiet, home, cwd: '/crash-many', env: {} });
    ids.push(s.id);
    dirs.push(s.dir);
    await s.close();
  }
  const idsFile = join(home, 'ids');
  writeFileSync(idsFile, `${ids.join('\n')}\n`);
  const acked = ids.map(() => new Map<number, string>());
  const allowed = dirs.map((dir) => new Set([sha(readFileSync(join(dir, 'working-memory/overview.md'), 'utf8'))]));
  let rand = seed;
  const next = (n: number): number => {
    rand = (rand * 1103515245 + 12345) % 2 ** 31;
    return rand % n;
  };
  let killed = 0;
  for (let t = 0; t < trials; t++) {
    const run = await runChild(home, idsFile, seed * 1000 + t, 100 + next(1500));
    if (run.killed) killed++;
    for (const [i, seq, hash] of run.acks) acked[i]!.set(seq, hash);
    for (const [i, hash] of run.wills) allowed[i]!.add(hash);
    const problems: string[] = [];
    let lost = 0;
    if (run.output.includes('FAILED')) problems.push(`the child failed: ${run.output.split('FAILED')[1]!.slice(0, 400)}`);
    for (let i = 0; i < sessions; i++) {
      try {
        const session = await openSession(ids[i]!, { llm: quiet, home, env: {} });
        try {
          const bySeq = new Map(logEntriesOf(dirs[i]!).flatMap((e) => (e.type === 'message' ? [[e.seq, e] as const] : [])));
          for (const [seq, hash] of acked[i]!) {
            const entry = bySeq.get(seq);
            if (!entry || sha(JSON.stringify(entry.message)) !== hash) {
              lost++;
              problems.push(`session ${i}: acknowledged message ${seq} is ${entry ? 'changed' : 'missing'}`);
            }
          }
          if (!allowed[i]!.has(sha(readFileSync(join(dirs[i]!, 'working-memory/overview.md'), 'utf8')))) {
            lost++;
            problems.push(`session ${i}: overview.md is none of the contents it was given`);
          }
          problems.push(...historyProblems(session.history).map((p) => `session ${i}: ${p}`));
          if (i < 3) {
            const off = session.on('message_end', (e) => acked[i]!.set(e.seq, sha(JSON.stringify(e.message))));
            const result = await session.prompt(`After crash ${t}: still there?`);
            off();
            if (result.status !== 'done') problems.push(`session ${i}: a new turn ended ${result.status}: ${result.error?.message}`);
          }
        } finally {
          await session.close();
        }
      } catch (error) {
        problems.push(`session ${i} did not open: ${(error as Error).message}`);
      }
    }
    tally.add(FAULT, {
      survived: problems.length === 0,
      lost,
      detail: `trial ${t} (${run.killed ? 'killed' : 'ran to the end'}): ${problems.slice(0, 5).join('; ')}`,
    });
  }
  const result = tally.result([
    `${trials} trials on ${sessions} sessions run at once in one process; ${acked.reduce((n, a) => n + a.size, 0)} acknowledged messages checked after every trial`,
  ]);
  for (const row of result.rows)
    row.note = `killed in ${killed} of ${trials}${killed < trials ? ' (the others ran to the end first)' : ''}`;
  rmSync(home, { recursive: true, force: true });
  return result;
}

function runChild(
  home: string,
  idsFile: string,
  seed: number,
  killAfterMs: number,
): Promise<{ killed: boolean; acks: [number, number, string][]; wills: [number, string][]; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [builtFile('test/reliability/crashManyChild.js'), home, idsFile, String(seed)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let timer: NodeJS.Timeout | null = null;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      output += d;
      // The kill comes a random while after every session is open, while their turns run.
      if (!timer && output.includes('READY\n')) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', (_code, signal) => {
      if (timer) clearTimeout(timer);
      clearTimeout(guard);
      const acks: [number, number, string][] = [];
      const wills: [number, string][] = [];
      for (const line of output.split('\n')) {
        const [tag, a, b, c] = line.split(' ');
        if (tag === 'ACK' && a && b && c) acks.push([Number(a), Number(b), c]);
        if (tag === 'WILL' && a && b) wills.push([Number(a), b]);
      }
      resolve({ killed: signal === 'SIGKILL', acks, wills, output });
    });
  });
}
