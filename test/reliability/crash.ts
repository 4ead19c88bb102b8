/**
 * Crash safety: a session is run in a child process (crashChild.ts) that is killed with
 * SIGKILL — by the parent at a random moment, or by itself at a chosen point: mid-stream,
 * mid-tool, half way through writing overview.md, a log line, an archive, a compaction
 * entry or meta.json, just before or after the rename of overview.md, while a summary is
 * prepared in the background (lost with the process; the next open prepares it again).
 * Trials follow one another on the same session, so each child also resumes what the last
 * one left.
 *
 * After each kill the parent opens the session and checks: it opens (the dead child's
 * lock is stale); every acknowledged message is in the log, unchanged; each memory file
 * holds one of the contents it was ever given, never a torn mix; the files compactions
 * name exist; the tracker agrees with the log; the derived history is a valid message
 * list; and a new turn works.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { createSession, openSession } from '../../src/session/index.js';
import { historyProblems, logEntriesOf, trackerProblems } from './checks.js';
import { sha } from './hash.js';
import { builtFile } from './built.js';
import { Tally, type FamilyResult } from './report.js';

/** Where a child kills itself, and how many occurrences in it may be. */
const POINTS: [string, number][] = [
  ['random', 0],
  ['stream', 60],
  ['tool', 8],
  ['overview-write', 2],
  ['overview-rename', 2],
  ['after-overview-rename', 2],
  ['log-append', 40],
  ['archive-write', 2],
  ['compaction-entry', 2],
  ['meta-write', 2],
  ['background', 16],
];

const LABELS: Record<string, string> = {
  random: 'SIGKILL at a random moment (incl. start-up and resume)',
  stream: 'mid-stream',
  tool: 'mid-tool (a slow host tool)',
  'overview-write': 'mid-write of overview.md (half written)',
  'overview-rename': 'before the rename of overview.md',
  'after-overview-rename': 'after the rename of overview.md, before its directory sync',
  'log-append': 'mid-append of a messages.jsonl line (half written)',
  'archive-write': 'mid-compaction: half of the archive file written',
  'compaction-entry': 'mid-compaction: half of the compaction entry written',
  'meta-write': 'mid-write of meta.json',
  background: 'while a summary is prepared in the background',
};

const SUMMARY =
  '## Goal\n- Crash test.\n\n## Decisions\n- none\n\n## Progress\n- summarised\n\n## Open items\n- none\n\n## Key facts\n- none';

interface ChildRun {
  killed: boolean;
  acks: [number, string][];
  wills: [string, string][];
  output: string;
}

export async function crashTrials(trials: number, seed = 1): Promise<FamilyResult> {
  const tally = new Tally('crash (SIGKILL)');
  const home = mkdtempSync(join(tmpdir(), 'workmem-crash-'));
  // It summarises too, as the children's model does: the open after a kill prepares its background summary again.
  const quiet = Object.assign(
    scriptedModel(() => ({ text: 'ok' }), { contextWindow: 6_000, maxOutputTokens: 800 }),
    {
      summarize: async () => ({ message: { role: 'assistant' as const, content: SUMMARY }, usage: null, finishReason: 'stop' }),
    },
  );
  const first = await createSession({ llm: quiet, home, cwd: '/crash', env: {}, trace: true });
  const { id, dir } = first;
  await first.close();

  const acked = new Map<number, string>();
  const allowed = new Map<string, Set<string>>();
  const present = new Set<string>();
  const allow = (path: string, hash: string) => (allowed.get(path) ?? allowed.set(path, new Set()).get(path)!).add(hash);
  allow('working-memory/overview.md', sha(readFileSync(join(dir, 'working-memory/overview.md'), 'utf8')));

  const kills = new Map<string, [number, number]>();
  /** Kills with a background summary in flight, and the opens after them whose first turn prepared one again. */
  let inFlight = 0;
  let again = 0;
  let rand = seed;
  const next = (n: number): number => {
    rand = (rand * 1103515245 + 12345) % 2 ** 31;
    return rand % n;
  };
  for (let t = 0; t < trials; t++) {
    const [point, range] = POINTS[t % POINTS.length]!;
    const spec = point === 'random' ? 'none' : `${point}:${1 + next(range)}`;
    const run = await runChild(home, id, seed * 1000 + t, spec, point === 'random' ? 80 + next(500) : null);
    const killedInFlight = point === 'background' && run.killed;
    if (killedInFlight) inFlight++;
    for (const [seq, hash] of run.acks) acked.set(seq, hash);
    for (const [path, hash] of run.wills) allow(path, hash);
    const problems: string[] = [];
    let lost = 0;
    if (run.output.includes('FAILED')) problems.push(`the child failed: ${run.output.split('FAILED')[1]!.slice(0, 400)}`);
    try {
      const session = await openSession(id, { llm: quiet, home, env: {}, settings: { backgroundThreshold: 0.15 } });
      try {
        const entries = logEntriesOf(dir);
        const bySeq = new Map(entries.filter((e) => e.type === 'message').map((e) => [e.seq, e]));
        for (const [seq, hash] of acked) {
          const entry = bySeq.get(seq);
          if (!entry || entry.type !== 'message' || sha(JSON.stringify(entry.message)) !== hash) {
            lost++;
            problems.push(`acknowledged message ${seq} is ${entry ? 'changed' : 'missing'}`);
          }
        }
        for (const [path, hashes] of allowed) {
          const abs = join(dir, path);
          if (!existsSync(abs)) {
            if (present.has(path)) {
              lost++;
              problems.push(`${path} disappeared`);
            }
            continue;
          }
          present.add(path);
          if (!hashes.has(sha(readFileSync(abs, 'utf8')))) {
            lost++;
            problems.push(`${path} is torn: its content is none of the ${hashes.size} it was given`);
          }
        }
        for (const entry of entries) {
          if (entry.type !== 'compaction') continue;
          for (const file of entry.files) {
            if (!existsSync(join(dir, file))) {
              lost++;
              problems.push(`compaction ${entry.seq} names ${file}, which is missing`);
            } else if (!readFileSync(join(dir, file), 'utf8').startsWith('# ')) problems.push(`${file} does not start as an archive does`);
          }
        }
        problems.push(...trackerProblems(session.state.tracker, entries), ...historyProblems(session.history));
        const off = session.on('message_end', (e) => acked.set(e.seq, sha(JSON.stringify(e.message))));
        let started = false;
        const offBackground = session.on('background_start', () => (started = true));
        const result = await session.prompt(`After crash ${t}: still there?`);
        off();
        offBackground();
        if (killedInFlight && started) again++;
        if (result.status !== 'done') problems.push(`a new turn after the crash ended ${result.status}: ${result.error?.message}`);
      } finally {
        await session.close();
      }
    } catch (error) {
      problems.push(`the session did not open: ${(error as Error).message}`);
    }
    tally.add(LABELS[point]!, {
      survived: problems.length === 0,
      lost,
      detail: `trial ${t} (${spec}, ${run.killed ? 'killed' : 'ran to the end'}): ${problems.join('; ')}`,
    });
    const k = kills.get(point) ?? [0, 0];
    kills.set(point, [k[0] + (run.killed ? 1 : 0), k[1] + 1]);
  }
  const result = tally.result();
  for (const row of result.rows) {
    const point = Object.keys(LABELS).find((p) => LABELS[p] === row.fault)!;
    const [k, n] = kills.get(point)!;
    row.note = `killed in ${k} of ${n}${k < n ? ' (the others ran to the end first)' : ''}`;
  }
  const figures = [
    `${trials} trials on one session; ${acked.size} acknowledged messages checked after every trial`,
    `${inFlight} kills with a background summary in flight; the open after ${again} of them prepared it again in its first turn`,
  ];
  // Temporary files live in the session's .tmp/ (working-memory/ holds only the model's names).
  const leftovers = existsSync(join(dir, '.tmp')) ? readdirSync(join(dir, '.tmp')) : [];
  if (leftovers.length) figures.push(`temporary files left after the last open: ${leftovers.join(', ')}`);
  rmSync(home, { recursive: true, force: true });
  return { ...result, figures };
}

function runChild(home: string, id: string, seed: number, spec: string, killAfterMs: number | null): Promise<ChildRun> {
  const script = builtFile('test/reliability/crashChild.js');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, home, id, String(seed), spec], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const timer = killAfterMs === null ? null : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    // A child that hangs is a failure too; it is killed after 20 s.
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (_code, signal) => {
      if (timer) clearTimeout(timer);
      clearTimeout(guard);
      const acks: [number, string][] = [];
      const wills: [string, string][] = [];
      for (const line of output.split('\n')) {
        const [tag, a, b] = line.split(' ');
        if (tag === 'ACK' && a && b) acks.push([Number(a), b]);
        if (tag === 'WILL' && a && b) wills.push([a, b]);
      }
      resolve({ killed: signal === 'SIGKILL', acks, wills, output });
    });
  });
}
