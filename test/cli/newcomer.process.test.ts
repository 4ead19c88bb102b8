/**
 * A newcomer's first hour (issue 36), as they would meet it: every command that takes a
 * model tried offline with `testing:<profile>` and no key; the mistakes a newcomer makes
 * (a base URL without /v1, a typo in its scheme, a mistyped flag, a config.json that is an
 * array) each answered in one line that says what to do; the demo leaving nothing behind.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

const serve = serveProcesses();

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
