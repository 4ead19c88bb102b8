/**
 * One writer per session. A second process opening a session in use is refused with
 * "in use by pid N"; a lock left by a killed process is taken over; several processes
 * racing for a stale lock leave exactly one holder; in one process a second open is
 * refused and concurrent prompt() calls run one after another, in order.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname as hostName, tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptedModel } from '../../src/scriptedModel.js';
import { createSession, openSession, removeSession } from '../../src/session.js';
import { LOCK_FILE, SessionInUseError } from '../../src/sessionLock.js';
import { logEntriesOf } from './checks.js';
import { Tally, type FamilyResult } from './report.js';
import { builtFile } from './built.js';

const quiet = () => scriptedModel(() => ({ text: 'ok' }));

/** A process holding `id` open until its stdin closes; resolves with it once the session is open. */
function holder(home: string, id: string): Promise<{ pid: number; release: () => Promise<void>; kill: () => Promise<void> }> {
  const session = builtFile('src/session.js');
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
  const session = builtFile('src/session.js');
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

export async function lockCases(races = 5): Promise<FamilyResult> {
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
    const cases: [string, () => void, boolean][] = [
      [
        'a lock of a pid that is gone',
        () => writeFileSync(lock, JSON.stringify({ pid: 2 ** 22 + 12345, host: hostName(), since: 1, nonce: 'x' })),
        true,
      ],
      ['an empty lock file, older than 2 s', () => (writeFileSync(lock, ''), utimesSync(lock, new Date(0), new Date(0))), true],
      ['an empty lock file just created (being written)', () => writeFileSync(lock, ''), false],
      [
        'a lock from another host',
        () => writeFileSync(lock, JSON.stringify({ pid: 1, host: 'elsewhere.example', since: 1, nonce: 'y' })),
        false,
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
        { survived: opened === opens && (opens || detail.length > 0), detail: detail || 'opened' },
        opens ? 'taken over' : 'refused, clearly',
      );
    }
  }

  // Processes racing for a stale lock: exactly one gets it each time.
  for (let round = 0; round < races; round++) {
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 2 ** 22 + round, host: hostName(), since: 1, nonce: `r${round}` }));
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
  return tally.result();
}
