/**
 * One writer per session. A second process opening a session in use is refused with
 * "in use by pid N"; a lock left by a killed process is taken over; several processes
 * racing for a stale lock leave exactly one holder; in one process a second open is
 * refused and concurrent prompt() calls run one after another, in order.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { hostname as hostName, tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { createSession, openSession, removeSession } from '../../src/session/index.js';
import { LOCK_FILE, SessionInUseError } from '../../src/storage/sessionLock.js';
import { logEntriesOf } from './checks.js';
import { Tally, type FamilyResult } from './report.js';
import { builtFile } from './built.js';

const quiet = () => scriptedModel(() => ({ text: 'ok' }));

/** A process holding `id` open until its stdin closes; resolves with it once the session is open. */
function holder(home: string, id: string): Promise<{ pid: number; release: () => Promise<void>; kill: () => Promise<void> }> {
  const session = builtFile('src/session/index.js');
  const script = `const { openSession } = await import(${JSON.stringify(session)});
    const s = await openSession(${JSON.stringify(id)}, { llm: { model: 'x', contextWindow: 128000, maxOutputTokens: 4096, complete: async () => ({ message: { role: 'assistant', content: 'ok' }, usage: null, finishReason: 'stop' }) }, home: ${JSON.stringify(home)}, env: {}, trace: false });
    console.log('OPEN');
    process.stdin.resume(); process.stdin.on('end', async () => { await s.close(); process.exit(0); });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (d.includes('OPEN'))
        resolve({
          pid: child.pid!,
          release: async () => {
            child.stdin.end();
            await exited;
          },
          kill: async () => {
            child.kill('SIGKILL');
            await exited;
          },
        });
    });
    child.on('exit', (code) => reject(new Error(`the holder exited (${code}) before opening the session`)));
  });
}

/** Open in another process; resolves with what it printed ("OPEN" or the error). */
function tryOpenElsewhere(home: string, id: string): Promise<string> {
  const session = builtFile('src/session/index.js');
  const script = `const { openSession } = await import(${JSON.stringify(session)});
    try { const s = await openSession(${JSON.stringify(id)}, { llm: { model: 'x', contextWindow: 128000, maxOutputTokens: 4096, complete: async () => ({ message: { role: 'assistant', content: 'ok' }, usage: null, finishReason: 'stop' }) }, home: ${JSON.stringify(home)}, env: {}, trace: false });
      const start = Date.now(); await new Promise((r) => setTimeout(r, 150)); const end = Date.now(); await s.close(); console.log('HELD ' + start + ' ' + end); }
    catch (e) { console.log(e.name + ': ' + e.message); }`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('exit', () => resolve(out.trim()));
  });
}

/** Racer processes (lockRacer.ts), each answering one line per command. */
function racers(count: number): { pids: number[]; ask: (i: number, line: string) => Promise<string>; close: () => Promise<void> } {
  const script = builtFile('test/reliability/lockRacer.js');
  const children: ChildProcessWithoutNullStreams[] = [];
  const waiting: ((line: string) => void)[][] = [];
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    waiting.push([]);
    createInterface({ input: child.stdout }).on('line', (line) => waiting[i]!.shift()?.(line));
    child.stderr.setEncoding('utf8').on('data', (d: string) => process.stderr.write(d));
  }
  return {
    pids: children.map((c) => c.pid!),
    ask: (i, line) =>
      new Promise((resolve) => {
        waiting[i]!.push(resolve);
        children[i]!.stdin.write(`${line}\n`);
      }),
    close: async () => {
      await Promise.all(
        children.map((c) => {
          const exited = new Promise<void>((resolve) => c.on('exit', () => resolve()));
          c.stdin.end();
          return exited;
        }),
      );
    },
  };
}

/** A lock file as another process would have left it, its heartbeat (mtime) `ageMs` old. */
function plantLock(path: string, record: Record<string, unknown> | null, ageMs: number): void {
  writeFileSync(path, record ? `${JSON.stringify(record)}\n` : '');
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
}

/**
 * `trials` times: a stale lock (its holder dead, its heartbeat old) and `count` processes
 * released at the same instant to take it over. Each winner keeps the lock until every
 * racer has answered, so two winners of one trial are two holders at once.
 */
async function raceForStaleLocks(tally: Tally, trials: number, count: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'workmem-lockrace-'));
  const lock = join(dir, LOCK_FILE);
  const pool = racers(count);
  let doubles = 0;
  try {
    for (let trial = 0; trial < trials; trial++) {
      const empty = trial % 5 === 4; // a holder killed between creating its lock and writing it
      plantLock(lock, empty ? null : { pid: 2 ** 22 + trial, host: hostName(), since: 1, nonce: `t${trial}` }, 60_000);
      const at = Date.now() + 40;
      const answers = await Promise.all(Array.from({ length: count }, (_, i) => pool.ask(i, `go ${dir} ${at}`)));
      const winners = answers.flatMap((a, i) => (a === 'got' ? [i] : []));
      const others = answers.filter((a) => a !== 'got');
      if (winners.length > 1) doubles++;
      tally.add(
        `${count} processes race for a stale lock`,
        {
          survived: winners.length === 1 && others.every((a) => a.startsWith('refused')),
          detail: `trial ${trial}: ${winners.length} holders; ${answers.join(' | ')}`,
        },
        'exactly one holder each time',
      );
      for (const i of winners) await pool.ask(i, 'release');
      rmSync(lock, { force: true });
    }
  } finally {
    await pool.close();
  }
  const leftovers = readdirSync(dir).length;
  rmSync(dir, { recursive: true, force: true });
  return `lock race: ${trials} trials of ${count} processes, ${doubles} with two holders at once, ${leftovers} file(s) left behind`;
}

/**
 * Staleness follows the heartbeat, with a short one (100 ms, stale after 600 ms) so the
 * cases take a second: a live holder keeps its lock well past the grace period; a holder
 * that stops renewing (SIGSTOP: alive, pid and all) loses it.
 */
async function heartbeatCases(tally: Tally): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'workmem-heartbeat-'));
  const lock = join(dir, LOCK_FILE);
  const pool = racers(2);
  const timing = '100 600';
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    const first = await pool.ask(0, `go ${dir} ${Date.now()} ${timing}`);
    await pause(1_500);
    let age = Infinity;
    try {
      age = Date.now() - statSync(lock).mtimeMs;
    } catch {
      /* no lock at all */
    }
    const second = await pool.ask(1, `go ${dir} ${Date.now()} ${timing}`);
    tally.add('a live holder keeps renewing its heartbeat past the grace period', {
      survived: first === 'got' && second.startsWith('refused') && age < 600,
      detail: `holder: ${first}; heartbeat ${Math.round(age)} ms old after 1.5 s; second: ${second}`,
    });
    if (second === 'got') await pool.ask(1, 'release');

    const frozen = pool.pids[0]!;
    process.kill(frozen, 'SIGSTOP');
    await pause(1_200);
    const taken = await pool.ask(1, `go ${dir} ${Date.now()} ${timing}`);
    process.kill(frozen, 'SIGCONT');
    // The frozen holder wakes up: releasing must not remove the lock that is no longer its own.
    await pool.ask(0, 'release');
    let kept = false;
    try {
      statSync(lock);
      kept = true;
    } catch {
      /* removed */
    }
    tally.add('a holder that stops renewing (SIGSTOP) loses its lock after the grace period', {
      survived: first === 'got' && taken === 'got' && kept,
      detail: `taker: ${taken}; the lock ${kept ? 'stayed' : 'was removed'} when the old holder released`,
    });
    if (taken === 'got') await pool.ask(1, 'release');
  } finally {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function lockCases(races = 500, sessionRaces = 5): Promise<FamilyResult> {
  const tally = new Tally('one writer');
  const home = mkdtempSync(join(tmpdir(), 'workmem-lock-'));
  const created = await createSession({ llm: quiet(), home, cwd: '/lock', env: {}, trace: false });
  const { id, dir } = created;
  await created.prompt('first');
  await created.close();

  // Another process has it open: refused, naming that process.
  {
    const other = await holder(home, id);
    let detail = 'opened a session another process holds';
    let ok = false;
    try {
      await (await openSession(id, { llm: quiet(), home, env: {} })).close();
    } catch (error) {
      ok = error instanceof SessionInUseError && error.pid === other.pid && error.message.includes(`in use by pid ${other.pid}`);
      detail = (error as Error).message;
    }
    tally.add('a second process opens a session in use', { survived: ok, detail });
    let removed = false;
    try {
      await removeSession(id, { home });
      removed = true;
    } catch (error) {
      removed = !(error instanceof SessionInUseError);
    }
    tally.add('removing a session in use', { survived: !removed, detail: 'a session in use was removed' });
    // Killed while holding it: the lock is stale and the next opener takes it over.
    await other.kill();
    try {
      const session = await openSession(id, { llm: quiet(), home, env: {} });
      const result = await session.prompt('after the holder died');
      await session.close();
      tally.add('the holder is killed (SIGKILL): its stale lock is taken over', { survived: result.status === 'done' });
    } catch (error) {
      tally.add('the holder is killed (SIGKILL): its stale lock is taken over', { survived: false, detail: (error as Error).message });
    }
  }

  // This process has it open: another process is refused with our pid, and a second open here too.
  {
    const session = await openSession(id, { llm: quiet(), home, env: {} });
    const out = await tryOpenElsewhere(home, id);
    tally.add('this process holds it; another process tries', {
      survived: out.startsWith('SessionInUseError') && out.includes(`pid ${process.pid}`),
      detail: out,
    });
    let second = 'opened twice';
    try {
      await (await openSession(id, { llm: quiet(), home, env: {} })).close();
    } catch (error) {
      second = (error as Error).message;
    }
    tally.add('a second open in the same process', { survived: /already open in this process/.test(second), detail: second });

    // Concurrent prompt() calls queue in order.
    const texts = Array.from({ length: 12 }, (_, i) => `concurrent ${i}`);
    const results = await Promise.all(texts.map((t) => session.prompt(t)));
    const order = logEntriesOf(dir)
      .flatMap((e) =>
        e.type === 'message' && e.message.role === 'user' && e.message.content.startsWith('concurrent') ? [e.message.content] : [],
      )
      .slice(-texts.length);
    const turns = results.map((r) => r.turn!);
    tally.add('12 concurrent prompt() calls in one process', {
      survived:
        results.every((r) => r.status === 'done') &&
        JSON.stringify(order) === JSON.stringify(texts) &&
        turns.every((t, i) => i === 0 || t === turns[i - 1]! + 1),
      detail: `order ${order.join(', ')}; turns ${turns.join(', ')}`,
    });
    await session.close();
  }

  // Lock files that are not a live holder's.
  {
    const lock = join(dir, LOCK_FILE);
    const gone = 2 ** 22 + 12345; // above Linux's largest pid: no process has it
    const cases: [string, () => void, boolean][] = [
      [
        'a lock of a pid that is gone, its heartbeat stopped a minute ago',
        () => plantLock(lock, { pid: gone, host: hostName(), since: 1, nonce: 'x' }, 60_000),
        true,
      ],
      [
        'a live holder in another pid namespace (its pid is dead here, its heartbeat fresh)',
        () => plantLock(lock, { pid: gone, host: hostName(), since: Date.now() - 5_000, nonce: 'ns' }, 500),
        false,
      ],
      [
        'a lock of a live pid whose heartbeat stopped a minute ago (a reused pid, a hung holder)',
        () => plantLock(lock, { pid: 1, host: hostName(), since: 1, nonce: 'reused' }, 60_000),
        true,
      ],
      ['an empty lock file, older than 2 s', () => plantLock(lock, null, 60_000), true],
      ['an empty lock file just created (being written)', () => writeFileSync(lock, ''), false],
      [
        'a lock from another host, its heartbeat fresh',
        () => plantLock(lock, { pid: 1, host: 'elsewhere.example', since: 1, nonce: 'y' }, 500),
        false,
      ],
      [
        'a lock from another host whose heartbeat stopped a minute ago',
        () => plantLock(lock, { pid: 1, host: 'elsewhere.example', since: 1, nonce: 'z' }, 60_000),
        true,
      ],
    ];
    for (const [name, make, opens] of cases) {
      make();
      let opened = false;
      let detail = '';
      try {
        await (await openSession(id, { llm: quiet(), home, env: {} })).close();
        opened = true;
      } catch (error) {
        detail = (error as Error).message;
      }
      rmSync(lock, { force: true });
      tally.add(
        name,
        // A refusal names the holder, since when, and what to do.
        {
          survived:
            opened === opens && (opens || /in use by pid \d+.* since .*remove/.test(detail) || /being (opened|written)/.test(detail)),
          detail: detail || 'opened',
        },
        opens ? 'taken over' : 'refused, clearly',
      );
    }
  }

  // Processes opening a session whose lock is stale: exactly one gets it each time.
  for (let round = 0; round < sessionRaces; round++) {
    plantLock(join(dir, LOCK_FILE), { pid: 2 ** 22 + round, host: hostName(), since: 1, nonce: `r${round}` }, 60_000);
    const outs = await Promise.all(Array.from({ length: 4 }, () => tryOpenElsewhere(home, id)));
    // Whoever got it held it for a while: no two of those spans may overlap.
    const spans = outs.filter((o) => o.startsWith('HELD')).map((o) => o.split(' ').slice(1).map(Number) as [number, number]);
    spans.sort((a, b) => a[0] - b[0]);
    const overlap = spans.some((s, i) => i > 0 && s[0] < spans[i - 1]![1]);
    const refused = outs.filter((o) => o.startsWith('SessionInUseError')).length;
    tally.add(
      '4 processes race for a stale lock',
      { survived: spans.length >= 1 && !overlap && spans.length + refused === outs.length, detail: outs.join(' | ') },
      'never two holders at once',
    );
    rmSync(join(dir, LOCK_FILE), { force: true });
  }
  rmSync(home, { recursive: true, force: true });
  await heartbeatCases(tally);
  const race = await raceForStaleLocks(tally, races, 6);
  return tally.result([race]);
}
