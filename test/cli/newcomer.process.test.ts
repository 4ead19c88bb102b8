/**
 * A newcomer's first hour (issue 36), as they would meet it: every command that takes a
 * model tried offline with `testing:<profile>` and no key; the mistakes a newcomer makes
 * (a base URL without /v1, a typo in its scheme, a mistyped flag, a config.json that is an
 * array) each answered in one line that says what to do; the demo leaving nothing behind.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { serveProcesses } from '../serve/serveProcess.js';
import { tempHome } from '../helpers.js';
import { cliPath, runCli as cli } from './cliProcess.js';

/** No key, no base URL, no model: a newcomer's environment. */
const bare = (): NodeJS.ProcessEnv => ({ WORKMEM_HOME: join(tempHome(), 'home'), TMPDIR: tempHome() });

describe('--model testing:<profile> on every command that takes a model, offline and with no key', () => {
  it('run answers, and chat -c continues the same session from what it remembered', async () => {
    const env = bare();
    const cwd = tempHome();
    const first = await cli(['run', '--model', 'testing:diligent', 'My name is Ada. Remember it.'], { env, cwd });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('Noted: your name is Ada.');
    expect(first.stderr).toMatch(/memory updated: working-memory\/overview\.md/);
    const chat = await cli(['chat', '-c', '--model', 'testing:diligent'], { env, cwd, input: 'What is my name?\n' });
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stdout).toContain('Your name is Ada.');
    expect(chat.stdout).toMatch(/\[testing:diligent · [\d,]+ \/ 32,768 tokens/);
  });

  it('each profile keeps its habits: lazy never writes its memory', async () => {
    const lazy = await cli(['run', '--model', 'testing:lazy', '--no-session', 'My name is Ada. Remember it.'], { env: bare() });
    expect(lazy.code, lazy.stderr).toBe(0);
    expect(lazy.stderr).not.toMatch(/memory updated/);
  });

  it('rpc takes it too', async () => {
    const input = `${JSON.stringify({ type: 'prompt', id: 'p1', text: 'My dog is Rex.' })}\n`;
    const rpc = await rpcUntil(['rpc', '--model', 'testing:diligent'], bare(), input, '"type":"turn_end"');
    const end = rpc.find((line) => line.type === 'turn_end');
    expect(end).toMatchObject({ status: 'done', text: expect.stringContaining('Rex') });
  });

  it('serve --upstream testing:<profile> answers a client with no key', async () => {
    const proxy = await serve(['--upstream', 'testing:diligent', '--port', '0'], bare());
    expect(proxy.output()).toMatch(/→ testing:diligent \(offline, http:\/\/127\.0\.0\.1:\d+\/v1\)/);
    const response = await fetch(`${proxy.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'My name is Ada. Remember it.' }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toContain('Noted: your name is Ada.');
  });

  it('a profile that does not exist is a usage error naming the profiles', async () => {
    for (const args of [
      ['run', '--model', 'testing:clever', 'hi'],
      ['serve', '--upstream', 'testing:clever'],
    ]) {
      const result = await cli(args, { env: bare() });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(
        'testing:clever: no such profile; the profiles are testing:diligent, testing:lazy, testing:forgetful, testing:eager, testing:sloppy',
      );
    }
  });
});

describe("a newcomer's mistakes, each told in one line", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ policy: protocolFollower({ seed: 1 }) });
  });
  afterAll(async () => server.close());

  it('a base URL without /v1: the 404 says to add it', async () => {
    const root = server.baseURL.replace(/\/v1$/, '');
    const result = await cli(['run', '--no-session', '--base-url', root, 'hi'], { env: bare() });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`(the base URL ${root} has no /v1, which most OpenAI-compatible servers expect: try ${root}/v1)`);
  });

  it('a base URL that is no http(s) URL is bad configuration (exit 2), never sent, so never retried', async () => {
    for (const [args, env] of [
      [['--base-url', 'htp:/oops'], {}],
      [[], { OPENAI_BASE_URL: 'htp:/oops' }],
    ] as const) {
      const result = await cli(['run', '--no-session', ...args, 'hi'], { env: { ...bare(), ...env } });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^workmem run: (--base-url|OPENAI_BASE_URL) = "htp:\/oops" is invalid/);
      expect(result.stderr).not.toMatch(/retry/i);
    }
  });

  it('a mistyped flag: did you mean the one it is closest to', async () => {
    const result = await cli(['run', '--contxt-window', '8192', 'hi'], { env: bare() });
    expect(result).toMatchObject({
      code: 2,
      stderr: 'workmem run: unknown option --contxt-window; did you mean --context-window? (see workmem run --help)\n',
    });
    const far = await cli(['run', '--frobnicate', 'hi'], { env: bare() });
    expect(far.stderr).toBe('workmem run: unknown option --frobnicate (see workmem run --help)\n');
  });

  it('a config.json that is not an object says so', async () => {
    for (const [text, what] of [
      ['[{"model": "gpt-4o"}]', 'an array'],
      ['"gpt-4o"', 'a string'],
      ['null', 'null'],
    ] as const) {
      const env = bare();
      mkdirSync(env.WORKMEM_HOME!, { recursive: true });
      writeFileSync(join(env.WORKMEM_HOME!, 'config.json'), text);
      const result = await cli(['run', '--model', 'testing:diligent', 'hi'], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `workmem run: ${join(env.WORKMEM_HOME!, 'config.json')} must hold one JSON object of settings, e.g. {"model": "gpt-4o-mini"}; it holds ${what}\n`,
      );
    }
  });
});

describe('workmem demo', () => {
  it('leaves nothing in the temporary folder, and says how to keep its session', async () => {
    const env = bare();
    const result = await cli(['demo', '--quiet', '--turns', '10'], { env, cwd: tempHome() });
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(env.TMPDIR!)).toEqual([]);
    expect(result.stdout).toContain('Its session is in a temporary home, removed at the end; --home <dir> keeps it for a replay.');
    expect(result.stdout).toMatch(/Replay:\s+node \S+ demo --home <dir>, then node \S+ viz --home <dir>/);
  });

  it("--help's length of the conversation is the demo's and the README's", async () => {
    const help = await cli(['--help']);
    const turns = Number(/demo\s+a (\d+)-turn conversation/.exec(help.stdout)?.[1]);
    const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    expect(readme).toContain(`a ${turns}-turn conversation with a scripted model`);
    const demo = await cli(['demo', '--quiet'], { env: bare(), cwd: tempHome() });
    expect(Number(/\| turns\s+\| ([^|]+?)\s+\|/.exec(demo.stdout)?.[1])).toBe(turns);
  });
});

describe('the attack round: secrets kept, disks kept in check', () => {
  it("serve's start line masks every secret of a PostgreSQL URL; a secret file others can read is warned of", async () => {
    const dir = tempHome();
    const urlFile = join(dir, 'database-url');
    writeFileSync(urlFile, 'postgres://ada:hunter2@127.0.0.1:9/db?sslmode=disable&password=s3cr%21t&sslpassword=k3y\n', { mode: 0o644 });
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'a-token-of-at-least-16-characters\n', { mode: 0o640 });
    const proxy = await serve(
      ['--upstream', 'testing:diligent', '--port', '0', '--database-url-file', urlFile, '--token-file', tokenFile],
      bare(),
    );
    await until(() => /Ctrl-C stops/.test(proxy.output()));
    const out = proxy.output();
    expect(out).toContain('(sessions in postgres://***@127.0.0.1:9/db?sslmode=disable&password=***&sslpassword=***;');
    for (const secret of ['hunter2', 's3cr', 'k3y']) expect(out).not.toContain(secret);
    expect(out).toContain(`--database-url-file ${urlFile} can be read by every local user (mode 0644): chmod 600 ${urlFile}`);
    expect(out).toContain(`--token-file ${tokenFile} can be read by its group (mode 0640): chmod 600 ${tokenFile}`);
    chmodSync(urlFile, 0o600);
    chmodSync(tokenFile, 0o600);
    const quiet = await serve(
      ['--upstream', 'testing:diligent', '--port', '0', '--database-url-file', urlFile, '--token-file', tokenFile],
      bare(),
    );
    await until(() => /Ctrl-C stops/.test(quiet.output()));
    expect(quiet.output()).not.toMatch(/can be read by/);
  });

  it('sessions prune --older-than removes the sessions not updated for that long; --dry-run only lists them', async () => {
    const env = bare();
    const cwd = tempHome();
    const ids: string[] = [];
    for (const text of ['first, old', 'second, old', 'third, new']) {
      const made = await cli(['run', '--model', 'testing:diligent', text], { env, cwd });
      ids.push(/session ([0-9a-f-]{36})/.exec(made.stderr)![1]!);
    }
    // Two of them last written 40 days ago, as a proxy's forgotten conversations would be.
    const sessionsDir = join(env.WORKMEM_HOME!, 'sessions');
    for (const id of ids.slice(0, 2)) {
      const [folder] = readdirSync(sessionsDir).filter((f) => readdirSync(join(sessionsDir, f)).includes(id));
      const meta = join(sessionsDir, folder!, id, 'meta.json');
      writeFileSync(meta, JSON.stringify({ ...JSON.parse(readFileSync(meta, 'utf8')), updatedAt: Date.now() - 40 * 86_400_000 }));
    }
    const dry = await cli(['sessions', 'prune', '--older-than', '30d', '--dry-run'], { env, cwd });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`would remove ${ids[0]!.slice(0, 8)} .*first, old`));
    expect(dry.stdout).toMatch(/2 sessions in \S+ not updated since .* \(--dry-run: none removed\)/);
    expect((await cli(['sessions', 'list'], { env, cwd })).stdout.match(/old|new/g)).toHaveLength(3);
    const pruned = await cli(['sessions', 'prune', '--older-than', '30d'], { env, cwd });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/2 sessions in \S+ not updated since .* removed\n$/);
    const left = (await cli(['sessions', 'list'], { env, cwd })).stdout;
    expect(left).toContain(ids[2]!.slice(0, 8));
    expect(left).not.toContain(ids[0]!.slice(0, 8));
    const bad = await cli(['sessions', 'prune', '--older-than', 'a month'], { env, cwd });
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('give an age such as 90m, 12h, 30d or 2w') });
  });
});

const serve = serveProcesses();

/** Waits until `check` holds (the run's hang guard bounds it). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 50));
}

/** The JSON lines an rpc process prints until one contains `until`; then its stdin is closed. */
function rpcUntil(args: string[], env: NodeJS.ProcessEnv, input: string, until: string): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath(), ...args], { env: { PATH: process.env.PATH, ...env }, cwd: tempHome() });
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes(until)) child.stdin.end();
    });
    child.on('close', (code) => {
      if (!out.includes(until)) reject(new Error(`rpc exited ${code} before ${until}:\n${out}\n${err}`));
      else
        resolve(
          out
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as Record<string, unknown>),
        );
    });
    child.stdin.write(input);
  });
}
