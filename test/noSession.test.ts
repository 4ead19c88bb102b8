/**
 * --no-session: a throwaway run of the built CLI leaves nothing in the sessions home nor in
 * the temporary directory; it refuses the flags that would keep or resume a session.
 * (Run `npm run build` before this file alone.)
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolFollower, startTestServer, type TestServer } from '../src/testing/index.js';
import { DATABASE_URL_WARNING } from '../src/cli/processTitle.js';
import { runCli as cli } from './cliProcess.js';
import { tempHome } from './helpers.js';

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
});
