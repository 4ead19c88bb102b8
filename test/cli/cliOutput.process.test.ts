/**
 * What the built CLI prints and keeps: `run` puts only the answer on stdout and reads a
 * prompt from stdin, chat keeps a pinned mode and reports /compact once, `--session ""`
 * and bad configuration values are refused without printing a secret.
 * (Run `npm run build` before running this file alone.)
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { scripted, startTestServer, type TestServer } from '../../src/testing/index.js';
import { cmdlineWhileRunning, runCli as cli } from './cliProcess.js';
import { DATABASE_URL_WARNING } from '../../src/cli/processTitle.js';
import { cliServerEnv, tempHome } from '../helpers.js';
import { brokenConfigs, keyPieces } from '../reliability/cli.js';

let server: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  ({ server, env } = await cliServerEnv());
});
afterAll(async () => server.close());

/** The compaction entries of the only session under a home, as messages.jsonl keeps them. */
function compactionRecords(home: string): { reason: string; tokensBefore: number; tokensAfter: number }[] {
  return readFileSync(join(sessionDir(home), 'messages.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; reason: string; tokensBefore: number; tokensAfter: number })
    .filter((e) => e.type === 'compaction');
}

/** The only session directory under a home. */
function sessionDir(home: string): string {
  const root = join(home, 'sessions');
  const dirs = readdirSync(root).flatMap((cwd) => readdirSync(join(root, cwd)).map((id) => join(root, cwd, id)));
  expect(dirs).toHaveLength(1);
  return dirs[0]!;
}

describe('workmem run', () => {
  it('stdout carries only the answer; tool calls, memory writes and the status line go to stderr', async () => {
    const result = await cli(['run', 'My name is Ada.'], { env, cwd: tempHome() });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Noted: your name is Ada.\n');
    expect(result.stderr).toContain('→ write(');
    expect(result.stderr).toContain('✎ memory updated');
    expect(result.stderr).toMatch(/session [0-9a-f-]{36}\n$/);
  });

  it('reads the prompt from stdin when none is given; an empty stdin is a usage error', async () => {
    const piped = await cli(['run'], { env, cwd: tempHome(), input: 'My city is Lyon.\n' });
    expect(piped).toMatchObject({ code: 0, stdout: 'Noted: your city is Lyon.\n' });
    const empty = await cli(['run'], { env, cwd: tempHome(), input: '  \n' });
    expect(empty.code).toBe(2);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toMatch(/^workmem run: give the prompt.*stdin was empty/);
  });

  it('--session "" is refused, and starts no session', async () => {
    const home = tempHome();
    for (const command of ['run', 'chat', 'rpc']) {
      const result = await cli([command, '--session', '', 'hi'], { env: { ...env, WORKMEM_HOME: home }, cwd: tempHome() });
      expect(result.code, command).toBe(2);
      expect(result.stderr, command).toBe(`workmem ${command}: --session needs a session id, got an empty string\n`);
    }
    expect(() => readdirSync(join(home, 'sessions'))).toThrow(/ENOENT/);
  });
});

describe('chat', () => {
  it('/mode phase1 is kept on exit: meta.json pins it and chat --continue resumes pinned', async () => {
    const home = tempHome();
    const cwd = tempHome();
    const first = await cli(['chat'], { env: { ...env, WORKMEM_HOME: home }, cwd, input: '/mode phase1\n/exit\n' });
    expect(first.code).toBe(0);
    const meta = JSON.parse(readFileSync(join(sessionDir(home), 'meta.json'), 'utf8')) as { pinnedMode: string | null };
    expect(meta.pinnedMode).toBe('phase1');
    const again = await cli(['chat', '--continue'], { env: { ...env, WORKMEM_HOME: home }, cwd, input: '/mode\n/exit\n' });
    expect(again.stdout).toContain('history mode: phase1 (pinned)');
  });

  it('round 3 new user: /sessions shows each session with the title sessions list shows, for a session made by run too', async () => {
    const home = tempHome();
    const cwd = tempHome();
    const runEnv = { ...env, WORKMEM_HOME: home };
    expect((await cli(['run', 'My name is Ada.'], { env: runEnv, cwd })).code).toBe(0);
    expect((await cli(['chat', '--name', 'planning'], { env: runEnv, cwd, input: 'Hello.\n/exit\n' })).code).toBe(0);
    const list = await cli(['sessions', 'list'], { env: runEnv, cwd });
    const listed = list.stdout
      .trim()
      .split('\n')
      .slice(2)
      .map((row) => ({ id: row.slice(0, 8), title: row.split(/\s{2,}/).at(-1)! }));
    expect(listed.map((r) => r.title).sort()).toEqual(['My name is Ada.', 'planning']);
    const chat = await cli(['chat'], { env: runEnv, cwd, input: '/sessions\n/exit\n' });
    for (const { id, title } of listed) expect(chat.stdout).toMatch(new RegExp(`^  ${id}[0-9a-f-]{28}  [\\d-]+ [\\d:]+  ${title}$`, 'm'));
  });

  it('/compact prints one line, with the figures of its compaction record', async () => {
    const home = tempHome();
    const turns = ['pet', 'city', 'car', 'boat', 'team', 'song'].map(
      (key, i) => `My ${key} is ${key}-${i}. ${'Some context that makes this turn long enough to be worth archiving. '.repeat(6)}`,
    );
    const input = [...turns, '/compact', '/exit'].join('\n') + '\n';
    const result = await cli(['chat'], { env: { ...env, WORKMEM_HOME: home }, cwd: tempHome(), input });
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n').filter((l) => /compact/i.test(l));
    expect(lines).toHaveLength(1);
    const [record] = compactionRecords(home);
    expect(record).toMatchObject({ reason: 'manual' });
    expect(record!.tokensAfter).toBeLessThan(record!.tokensBefore);
    expect(lines[0]).toContain(`${record!.tokensBefore} → ${record!.tokensAfter} tokens`);
  });

  it('round 3 new user: the fallback marker prints the figures of its compaction record, not the whole request', async () => {
    const home = tempHome();
    const turns = Array.from(
      { length: 10 },
      (_, i) => `My item${i} is value${i}. ${'Some context that makes this turn long enough to matter. '.repeat(25)}`,
    );
    const input = [...turns, '/exit'].join('\n') + '\n';
    const args = ['chat', '--mode', 'phase1', '--context-window', '4000', '--max-output-tokens', '300'];
    const result = await cli(args, { env: { ...env, WORKMEM_HOME: home }, cwd: tempHome(), input });
    expect(result.code).toBe(0);
    const markers = [...result.stdout.matchAll(/⤓ compacted \((\w+)\): (\d+) items, history (\d+) → (\d+) tokens/g)].map((m) => ({
      reason: m[1],
      tokensBefore: Number(m[3]),
      tokensAfter: Number(m[4]),
    }));
    expect(markers.length).toBeGreaterThan(0);
    // The fallback's line, with its own summary or one prepared in the background.
    expect(markers.every((m) => m.reason === 'fallback' || m.reason === 'background')).toBe(true);
    expect(markers).toEqual(
      compactionRecords(home).map(({ reason, tokensBefore, tokensAfter }) => ({ reason, tokensBefore, tokensAfter })),
    );
  });
});

describe('configuration errors', () => {
  it('show a bad value masked and truncated, never a key whole', async () => {
    const key = 'sk-live-0123456789abcdefghijklmnop';
    const asURL = await cli(['run', 'hi', '--base-url', key], { env: { ...env, OPENAI_API_KEY: key } });
    expect(asURL.code).toBe(2);
    expect(asURL.stderr).toMatch(/--base-url = .* is invalid/);
    expect(asURL.stderr).not.toContain(key);
    expect(asURL.stderr).not.toContain('0123456789abcdef');

    const home = tempHome();
    const other = 'hunter2-correct-horse-battery';
    writeFileSync(join(home, 'config.json'), JSON.stringify({ apiKey: other, baseURL: other }));
    const fromFile = await cli(['run', 'hi'], { env: { ...env, WORKMEM_HOME: home } });
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toMatch(/config\.json: baseURL = .* is invalid/);
    expect(fromFile.stderr).not.toContain(other);

    // A base URL too broken to parse, with a password in it: the environment and the library both.
    const broken = await cli(['run', 'hi'], { env: { ...env, OPENAI_BASE_URL: 'http//user:hunter2secret@host' } });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/OPENAI_BASE_URL = .*\*\*\*@host.* is invalid/);
    expect(broken.stderr).not.toContain('hunter2secret');
    expect(() => openaiChat({ env: { OPENAI_BASE_URL: 'http//user:hunter2secret@host', OPENAI_API_KEY: 'k' } })).toThrow(
      /"http\/\/\*\*\*@host" is not a URL/,
    );

    const long = await cli(['run', 'hi', '--model', 'm', '--language', 'x'.repeat(5000)], { env });
    expect(long.code).toBe(2);
    expect(long.stderr.length).toBeLessThan(400);
  });
});

describe('configuration errors, issue 24', () => {
  it('round 3 #13: a config.json that is not JSON is placed by line and column, with not a character of its key, under --debug too', async () => {
    const key = 'sk-proj-Zq9XwV7bKt3LmN8pRs2TuY6v';
    const home = tempHome();
    for (const text of brokenConfigs(key)) {
      writeFileSync(join(home, 'config.json'), text);
      for (const args of [
        ['run', 'hi'],
        ['run', 'hi', '--debug'],
      ]) {
        const result = await cli(args, { env: { ...env, WORKMEM_HOME: home } });
        expect(result.code, text).toBe(2);
        expect(result.stderr, text).toMatch(/config\.json is not valid JSON: .*(line \d+, column \d+|ends too early)/);
        expect(keyPieces(result.stderr, key), `${text}\n${result.stderr}`).toEqual([]);
      }
    }
    writeFileSync(join(home, 'config.json'), `{"model": "m",\n  "apiKey": ${key}}`);
    expect((await cli(['run', 'hi'], { env: { ...env, WORKMEM_HOME: home } })).stderr).toContain('unexpected text at line 2, column 13');
  });

  it('round 3 new user: an invalid value lists every valid value, from a flag, config.json or the environment alike', async () => {
    const whole = 'is invalid: expected one of before-history, after-history, by-phase\n';
    const home = tempHome();
    const flag = await cli(['run', 'hi', '--memory-position', 'middle'], { env: { ...env, WORKMEM_HOME: home } });
    expect(flag.stderr).toBe(`workmem run: --memory-position = "middle" ${whole}`);
    writeFileSync(join(home, 'config.json'), JSON.stringify({ memoryPosition: 'middle' }));
    const file = await cli(['run', 'hi'], { env: { ...env, WORKMEM_HOME: home } });
    expect(file.stderr).toBe(`workmem run: ${join(home, 'config.json')}: memoryPosition = "middle" ${whole}`);
    const fromEnv = await cli(['run', 'hi'], { env: { ...env, WORKMEM_HOME: tempHome(), WM_MEMORY_POSITION: 'middle' } });
    expect(fromEnv.stderr).toBe(`workmem run: WM_MEMORY_POSITION="middle" ${whole}`);
    const target = await cli(['chat', '--fallback-target', 'most'], { env: { ...env, WORKMEM_HOME: tempHome() } });
    expect(target.stderr).toBe('workmem chat: --fallback-target = "most" is invalid: expected one of budget, recent-turns\n');
  });
});

describe('the database URL and the command line', () => {
  const password = 'pw-on-the-command-line-93';
  const url = `postgres://ada:${password}@127.0.0.1:1/nowhere`;

  const cmdlineOf = (args: string[]) => cmdlineWhileRunning(['viz', '--port', '0', '--home', tempHome(), ...args], 'workmem visualizer on');

  it.runIf(existsSync('/proc/self/cmdline'))(
    'round 3 #2: --database-url leaves /proc/<pid>/cmdline at once, and a warning says it was visible',
    async () => {
      for (const form of [['--database-url', url], [`--database-url=${url}`]]) {
        const { cmdline, stderr } = await cmdlineOf(form);
        expect(cmdline).not.toContain(password);
        expect(cmdline).toMatch(/^workmem viz --port 0 --home \S+ --database-url[ =]\*\*\*$/);
        expect(stderr).toBe(DATABASE_URL_WARNING);
        expect(stderr).toMatch(/other local users can read it .*WORKMEM_DATABASE_URL or --database-url-file/);
      }
    },
  );

  it('round 3 #2: the URL comes from --database-url-file or WORKMEM_DATABASE_URL, without a warning, and --help says so everywhere', async () => {
    const dir = tempHome();
    const file = join(dir, 'database-url');
    writeFileSync(file, `\n${url}\n`, { mode: 0o600 });
    // Nothing listens on port 1: the error shows that the file's URL was used, without its password.
    for (const [args, extra] of [
      [['sessions', 'list', '--database-url-file', file], {}],
      [['memory', 'show', 'abcd1234', '--database-url-file', file], {}],
      [['sessions', 'list'], { WORKMEM_DATABASE_URL: url }],
    ] as const) {
      const result = await cli([...args], { env: { ...env, ...extra, WORKMEM_HOME: tempHome() } });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/PostgreSQL at postgres:\/\/127\.0\.0\.1:1\/nowhere: connect ECONNREFUSED/);
      expect(result.stderr).not.toContain(password);
      expect(result.stderr).not.toContain('--database-url puts');
    }
    const missing = await cli(['sessions', 'list', '--database-url-file', join(dir, 'nope')], { env });
    expect(missing).toMatchObject({
      code: 2,
      stderr: `workmem sessions: --database-url-file "${join(dir, 'nope')}" cannot be read: ENOENT\n`,
    });
    writeFileSync(file, 'mysql://ada:pw@host/db\n');
    const wrong = await cli(['sessions', 'list', '--database-url-file', file], { env });
    expect(wrong.stderr).toBe(`workmem sessions: --database-url-file "${file}" must be a postgres:// URL, got "mysql://***@host/db"\n`);
    const both = await cli(['sessions', 'list', '--database-url-file', file, '--database-url', url], { env });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --database-url or --database-url-file, not both');
    for (const command of ['chat', 'run', 'rpc', 'sessions', 'memory', 'viz']) {
      const help = await cli([command, '--help'], { env });
      expect(help.stdout, command).toMatch(/--database-url-file <path>\s+keep sessions in PostgreSQL/);
      expect(help.stdout, command).toContain('WORKMEM_DATABASE_URL');
      expect(help.stdout, command).toMatch(/--database-url <url>\s+the same URL as a flag: other local users can read it/);
    }
  });
});

describe('run prints the text of a failing server through the same filter', () => {
  it('no escape sequence in what a model said reaches stdout', async () => {
    const hostile = await startTestServer({ policy: scripted(['a\u001b]52;c;aGVsbG8=\u0007b\u001b[2Jc\u009b31md\re']) });
    const result = await cli(['run', 'hi'], { env: { ...env, OPENAI_BASE_URL: hostile.baseURL }, cwd: tempHome() });
    await hostile.close();
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('abcd\ufffde\n');
  });
});
