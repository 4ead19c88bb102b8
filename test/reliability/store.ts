/**
 * The state store family: the default file store under `<home>/state/` when writers are
 * killed mid-write, several processes share it, and its files are damaged.
 * - SIGKILL: three processes write item-like keys (durable) and one shared index-like key
 *   (not fsynced) into the same folder and are killed at random moments; every key a
 *   process was told was stored must be there with its value, and no file may be torn.
 * - Damage: the index and tracker files of a session torn; the session is still listed,
 *   opens, and works.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileStateStore } from '../../src/storage/fileStateStore.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { createSession, listSessions, openSession } from '../../src/session/index.js';
import { builtFile } from './built.js';
import { Tally, type FamilyResult } from './report.js';

const WRITERS = 3;

/** A writer: stores `items:w<n>:<i>` and `session:shared` in a loop, saying `ack <i>` after each. */
function writerScript(dir: string, writer: number): string {
  return `
    const { fileStateStore } = await import(${JSON.stringify(builtFile('src/storage/fileStateStore.js'))});
    const store = fileStateStore(${JSON.stringify(dir)});
    for (let i = 0; ; i++) {
      await store.set('items:w${writer}:' + i, { writer: ${writer}, i, text: 'x'.repeat(200 + (i % 7) * 300) });
      await store.set('session:shared', { writer: ${writer}, i });
      process.stdout.write('ack ' + i + '\\n');
    }
  `;
}

/**
 * Run the writers and kill each `killAfterMs[w]` after its first acknowledged write (timed
 * from then, not from the spawn, so a slow start on a loaded machine tests the same);
 * the last index each acknowledged.
 */
async function killedWriters(dir: string, killAfterMs: number[]): Promise<number[]> {
  return Promise.all(
    killAfterMs.map(
      (ms, w) =>
        new Promise<number>((resolve) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', writerScript(dir, w)], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let acked = -1;
          let buffer = '';
          child.stdout.on('data', (chunk: Buffer) => {
            buffer += chunk.toString();
            const lines = buffer.split('\n');
            buffer = lines.pop()!;
            for (const line of lines) {
              if (!line.startsWith('ack ')) continue;
              if (acked < 0) {
                clearTimeout(timer);
                timer = setTimeout(kill, ms);
              }
              acked = Number(line.slice(4));
            }
          });
          const kill = (): void => void child.kill('SIGKILL');
          let timer = setTimeout(kill, 60_000); // a writer that never starts
          child.on('exit', () => {
            clearTimeout(timer);
            resolve(acked);
          });
        }),
    ),
  );
}

async function killCase(tally: Tally, seed: number): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-store-'));
  const dir = join(home, 'state');
  let rand = seed;
  const next = (): number => (rand = (rand * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const killAfter = Array.from({ length: WRITERS }, () => Math.floor(next() * 400));
  try {
    const acked = await killedWriters(dir, killAfter);
    const reports: string[] = [];
    const store = fileStateStore(dir, { report: (m) => reports.push(m) });
    const problems: string[] = [];
    if (acked.some((a) => a < 0)) problems.push(`a writer never stored anything (acked ${acked.join('/')})`);
    let lost = 0;
    for (const [w, last] of acked.entries()) {
      const stored = new Map((await store.entries<{ i: number; writer: number }>(`items:w${w}:`)).map(([k, v]) => [k, v]));
      for (let i = 0; i <= last; i++) {
        const value = stored.get(`items:w${w}:${i}`);
        if (value?.i !== i || value.writer !== w) {
          lost++;
          problems.push(`writer ${w}: acknowledged item ${i} missing or wrong`);
        }
      }
    }
    const shared = await store.get<{ writer: number; i: number }>('session:shared');
    if (acked.some((a) => a >= 0) && (typeof shared?.writer !== 'number' || typeof shared.i !== 'number'))
      problems.push(`the shared key holds ${JSON.stringify(shared)}`);
    if (reports.length) {
      lost += reports.length;
      problems.push(...reports);
    }
    const listed = (await store.entries('')).length;
    const files = readdirSync(dir).filter((n) => n.endsWith('.json')).length;
    if (listed !== files) problems.push(`${files} files but ${listed} entries`);
    tally.add(
      `SIGKILL of ${WRITERS} processes writing to one state/ folder`,
      { survived: problems.length === 0, lost, detail: `seed ${seed}, acked ${acked.join('/')}: ${problems.slice(0, 5).join('; ')}` },
      'every acknowledged key there, no torn file, temp files never listed',
    );
    return acked.reduce((n, a) => n + a + 1, 0);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function damageCase(tally: Tally): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-store-'));
  const warnings: string[] = [];
  const warn = (message: string): void => void warnings.push(message);
  try {
    const session = await createSession({ llm: scriptedModel([{ text: 'One.' }]), home, cwd: '/w', env: {} });
    await session.prompt('Go.');
    await session.close();
    const dir = join(home, 'state');
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.json'))) writeFileSync(join(dir, name), '{"key":"sess');
    const problems: string[] = [];
    const listed = await listSessions({ home, warn });
    if (listed.length !== 1 || listed[0]!.id !== session.id) problems.push(`listed ${JSON.stringify(listed.map((e) => e.id))}`);
    const again = await openSession(session.id, { llm: scriptedModel([{ text: 'Two.' }]), home, env: {}, warn });
    const result = await again.prompt('Again.');
    await again.close();
    if (result.status !== 'done') problems.push(`the reopened session answered ${result.status}`);
    if (!warnings.some((w) => /state file .* skipped/.test(w))) problems.push('the torn state files were not reported');
    tally.add(
      'torn index and tracker files',
      { survived: problems.length === 0, detail: problems.join('; ') },
      'reported; the session is still listed, opens and works',
    );
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export async function storeCases(trials: number, seed = 1): Promise<FamilyResult> {
  const tally = new Tally('state store');
  let acknowledged = 0;
  for (let t = 0; t < trials; t++) acknowledged += await killCase(tally, seed + t);
  await damageCase(tally);
  return tally.result([`state store: ${acknowledged} acknowledged item writes checked after ${trials * WRITERS} killed writers`]);
}
