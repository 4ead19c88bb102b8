/**
 * --no-session: a throwaway run of the built CLI leaves nothing in the sessions home nor in
 * the temporary directory; it refuses the flags that would keep or resume a session.
 * (Run `npm run build` before this file alone.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { DATABASE_URL_WARNING } from '../../src/cli/processTitle.js';
import { cliPath, runCli as cli } from './cliProcess.js';
import { tempHome } from '../helpers.js';
import { HANG_MS } from '../hangGuard.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
});
afterAll(async () => server.close());

describe('--no-session', () => {
  it('workmem run --no-session answers and keeps nothing, on disk or in the home', async () => {
    const home = join(tempHome(), 'home'); // not created: a run that kept anything would create it
    const tmp = tempHome();
    const env = { WORKMEM_HOME: home, TMPDIR: tmp, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test' };
    const result = await cli(['run', '--no-session', 'My name is Ada.'], { env, cwd: tempHome() });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Noted: your name is Ada.');
    expect(result.stderr).toMatch(/\] no session kept\n$/);
    expect(existsSync(home)).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
    const json = await cli(['run', '--no-session', '--json', 'Hello.'], { env, cwd: tempHome() });
    expect(json.code).toBe(0);
    expect(json.stdout).toContain('"type":"turn_end"');
    expect(existsSync(home)).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('is refused with --continue, --session, --database-url and --inspect, before anything is made', async () => {
    const home = join(tempHome(), 'home');
    const tmp = tempHome();
    const env = { WORKMEM_HOME: home, TMPDIR: tmp, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test' };
    for (const [command, flag] of [
      ['run', '--continue'],
      ['chat', '--session=abc'],
      ['run', '--database-url=postgres://u:secret@127.0.0.1/db'],
      ['chat', '--inspect'],
    ] as const) {
      const result = await cli([command, '--no-session', flag, ...(command === 'run' ? ['hi'] : [])], { env, cwd: tempHome() });
      expect(result.code, `${command} ${flag}`).toBe(2);
      // A database URL given as a flag is warned about first: it was on the command line.
      const warned = flag.startsWith('--database-url') ? DATABASE_URL_WARNING : '';
      expect(result.stderr).toBe(
        `${warned}workmem ${command}: --no-session keeps nothing, so it does not go with --${flag.slice(2).split('=')[0]}\n`,
      );
      expect(result.stderr).not.toContain('secret');
    }
    expect(existsSync(home)).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
  });

  /** `workmem chat --no-session` reading a pipe that stays open, once it has made its temporary home. */
  async function pipedChat(env: NodeJS.ProcessEnv, tmp: string): Promise<{ child: ChildProcess; closed: Promise<number | null> }> {
    const child = spawn(process.execPath, [cliPath(), 'chat', '--no-session'], {
      env: { PATH: process.env.PATH, ...env },
      cwd: tempHome(),
    });
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.resume();
    const end = Date.now() + HANG_MS;
    while (!out.includes('--no-session: nothing is kept')) {
      if (Date.now() > end) throw new Error(`the chat did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(readdirSync(tmp).filter((n) => n.startsWith('workmem-throwaway-'))).not.toEqual([]);
    return { child, closed };
  }

  it('round 3 #10: chat --no-session reading a pipe removes its temporary home on SIGTERM and SIGHUP, a turn running or not', async () => {
    const tmp = tempHome();
    const env = { WORKMEM_HOME: join(tempHome(), 'home'), TMPDIR: tmp, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test' };
    for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
      const { child, closed } = await pipedChat(env, tmp);
      child.kill(signal);
      expect(await closed).toBe(0);
      expect(readdirSync(tmp), signal).toEqual([]);
    }
    // A turn under way: it is stopped, and the home removed all the same.
    server.inject({ type: 'stall', afterChunks: 2, ms: 30_000 });
    const { child, closed } = await pipedChat(env, tmp);
    child.stdin!.write('Tell me a long story.\n');
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGTERM');
    expect(await closed).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('round 3 #11: a temporary home left by a killed run is removed at the next start; a live one is kept', async () => {
    const tmp = tempHome();
    const env = { WORKMEM_HOME: join(tempHome(), 'home'), TMPDIR: tmp, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test' };
    const killed = await pipedChat(env, tmp);
    killed.child.stdin!.write('My secret plan is to sail west.\n');
    await new Promise((r) => setTimeout(r, 1000));
    killed.child.kill('SIGKILL');
    await killed.closed;
    const left = readdirSync(tmp);
    expect(left).toHaveLength(1); // SIGKILL: nothing could remove it
    const live = await pipedChat(env, tmp);
    try {
      const liveHome = readdirSync(tmp).find((n) => !left.includes(n))!;
      const next = await cli(['run', '--no-session', 'Hello.'], { env, cwd: tempHome() });
      expect(next.code).toBe(0);
      expect(readdirSync(tmp)).toEqual([liveHome]);
      // A plain run sweeps too.
      live.child.kill('SIGKILL');
      await live.closed;
      expect((await cli(['run', 'Hello.'], { env, cwd: tempHome() })).code).toBe(0);
      expect(readdirSync(tmp)).toEqual([]);
    } finally {
      live.child.kill('SIGKILL');
    }
  });
});
