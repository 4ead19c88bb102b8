/**
 * The built CLI, spawned as users run it, against the local test server.
 * (`npm test` builds first; run `npm run build` before running this file alone.)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolFollower, scripted, startTestServer, type TestServer } from '../../src/testing/index.js';
import { runRpcClient } from '../../examples/rpcClient.js';
import { startService } from '../../examples/httpService.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { runCli as cli } from './cliProcess.js';
import { tempHome } from '../helpers.js';
import WebSocket from 'ws';
import { startVizServer } from '../../src/viz/vizServer.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'bin.js');

let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;
const cwd = tempHome();

beforeAll(async () => {
  expect(existsSync(CLI), 'build the CLI first: npm run build').toBe(true);
  server = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
  home = tempHome();
  env = { WORKMEM_HOME: home, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test' };
});
afterAll(async () => server.close());

describe('workmem run', () => {
  it('prints the streamed answer, and sessions list shows the session it made', async () => {
    const first = await cli(['run', 'My name is Ada.'], { env, cwd });
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toContain('Noted: your name is Ada.');
    // Decorations (tool calls, memory writes) go to stderr too; the status line is last.
    expect(first.stderr).toMatch(
      /(^|\n)\[workmem-test · [\d,]+ \/ 32,768 tokens \(\d+ %\) · phase\d · \d since memory update · \d+ % of input cached\] session [0-9a-f-]{36}\n$/,
    );
    const id = /session ([0-9a-f-]{36})/.exec(first.stderr)![1]!;
    const again = await cli(['run', '--continue', 'What is my name?'], { env, cwd });
    expect(again.stdout).toContain('Your name is Ada.');
    const list = await cli(['sessions', 'list'], { env, cwd });
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(id.slice(0, 8));
    expect(list.stdout).toMatch(/My name is Ada\./);
    const show = await cli(['sessions', 'show', id.slice(0, 8)], { env, cwd });
    expect(show.stdout).toContain(`Session ${id}`);
    expect(show.stdout).toContain('user: What is my name?');
    const memory = await cli(['memory', 'show'], { env, cwd });
    expect(memory.stdout).toMatch(/^# Working Memory/);
  });

  it('--json prints every event as one JSON line; a failed turn exits 1', async () => {
    const json = await cli(['run', '--json', 'Hello there.'], { env, cwd: tempHome() });
    expect(json.code).toBe(0);
    const events = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; status?: string });
    expect(events[0]!.type).toBe('turn_start');
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['prompt_built', 'message_delta', 'message_end']));
    expect(events.at(-1)).toMatchObject({ type: 'turn_end', status: 'done' });

    const broken = await startTestServer({ policy: scripted([]), faults: () => ({ type: 'server_error', status: 503 }) });
    const failHome = tempHome();
    writeFileSync(join(failHome, 'config.json'), JSON.stringify({ maxRetries: 0 }));
    const failed = await cli(['run', 'hi'], { env: { ...env, WORKMEM_HOME: failHome, OPENAI_BASE_URL: broken.baseURL } });
    await broken.close();
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/workmem run: the turn failed: .*503/);
  });
});

describe('workmem rpc', () => {
  it('answers commands with their ids, streams events, survives bad lines, aborts, frames on \\n only', async () => {
    const slow = await startTestServer({ policy: protocolFollower(), chunkChars: 3, chunkDelayMs: 30 });
    const lines = [
      { type: 'get_state', id: 1 },
      'this is not json',
      { type: 'launch_rockets', id: 'x' },
      { type: 'set_mode', mode: 'sideways', id: 'bad-mode' },
      { type: 'prompt', id: 'p1', text: 'My city is Lyon.\u2028It has two rivers.' },
      { type: 'get_memory', id: 'm1' },
      { type: 'list_sessions', id: 'l1' },
      { type: 'set_mode', mode: 'phase1', id: 's1' },
    ];
    const input = lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
    const result = await cli(['rpc'], { env: { ...env, OPENAI_BASE_URL: slow.baseURL }, cwd: tempHome(), input });
    await slow.close();
    expect(result.code).toBe(0);
    const out = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const responses = out.filter((o) => o.type === 'response');
    expect(responses.map((r) => [r.command, r.success, r.id ?? null])).toEqual([
      ['get_state', true, 1],
      ['unknown', false, null],
      ['launch_rockets', false, 'x'],
      ['set_mode', false, 'bad-mode'],
      ['prompt', true, 'p1'],
      ['get_memory', true, 'm1'],
      ['list_sessions', true, 'l1'],
      ['set_mode', true, 's1'],
    ]);
    expect(responses[1]!.error).toMatch(/^line 2 is not JSON/);
    expect(responses[2]!.error).toMatch(/unknown command "launch_rockets"; known: prompt, abort/);
    expect(responses[3]!.error).toMatch(/mode/);
    expect((responses[0]!.data as { mode: string }).mode).toBe('phase1');
    // The prompt kept its U+2028 and ran to the end after stdin closed.
    const turnEnd = out.find((o) => o.type === 'turn_end')!;
    expect(turnEnd).toMatchObject({ status: 'done', promptId: (responses[4]!.data as { promptId: string }).promptId });
    expect(out.find((o) => o.type === 'turn_start')).toMatchObject({ text: 'My city is Lyon.\u2028It has two rivers.' });
  });

  it('abort stops the running turn', async () => {
    const slow = await startTestServer({
      policy: () => ({ content: 'a long answer that streams slowly over the wire' }),
      chunkChars: 2,
      chunkDelayMs: 40,
    });
    const child = spawn(process.execPath, [CLI, 'rpc'], {
      env: { PATH: process.env.PATH, ...env, OPENAI_BASE_URL: slow.baseURL },
      cwd: tempHome(),
    });
    const out: Record<string, unknown>[] = [];
    let buffer = '';
    const seen = new Promise<void>((resolve) => {
      child.stdout.on('data', (d) => {
        buffer += d;
        for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
          const event = JSON.parse(buffer.slice(0, at)) as Record<string, unknown>;
          buffer = buffer.slice(at + 1);
          out.push(event);
          if (event.type === 'message_delta' && out.filter((e) => e.type === 'message_delta').length === 2)
            child.stdin.write('{"type":"abort","id":"a"}\n');
          if (event.type === 'turn_end') resolve();
        }
      });
    });
    child.stdin.write('{"type":"prompt","id":"p","text":"Talk slowly."}\n');
    await seen;
    child.stdin.end();
    await new Promise((resolve) => child.on('close', resolve));
    await slow.close();
    expect(out.find((e) => e.type === 'response' && e.command === 'abort')).toMatchObject({ success: true, id: 'a' });
    expect(out.find((e) => e.type === 'turn_end')).toMatchObject({ status: 'aborted' });
  });
});

describe('--inspect', () => {
  it('rpc --inspect-port streams the session live to workmem viz', async () => {
    const viz = await startVizServer({ home });
    const page = new WebSocket(`ws://127.0.0.1:${viz.port}/live`, ['workmem', `token.${viz.token}`]);
    const seen: { type: string; sessionId?: string; record?: { k: string; event?: { type: string } } }[] = [];
    page.on('message', (data) => seen.push(JSON.parse(String(data))));
    await new Promise((resolve) => page.once('open', resolve));
    const result = await cli(['rpc', '--inspect-port', String(viz.port)], {
      env,
      cwd: tempHome(),
      input: '{"type":"prompt","text":"Hello, visualizer."}\n',
    });
    expect(result.code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    page.close();
    await viz.close();
    const records = seen.filter((m) => m.type === 'record');
    expect(records.length).toBeGreaterThan(10);
    expect(records.some((m) => m.record?.k === 'step')).toBe(true);
    expect(records.some((m) => m.record?.event?.type === 'turn_end')).toBe(true);
    expect(seen.some((m) => m.type === 'live' && (m as { sessions?: string[] }).sessions?.includes(records[0]!.sessionId!))).toBe(true);
  });
});

describe('workmem demo', () => {
  it('completes 30+ turns with a reminder, a memory write, the switch to phase 2 and a compaction, then prints its table', async () => {
    const result = await cli(['demo', '--quiet', '--home', tempHome()], { cwd: tempHome() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('protocolFollower, a deterministic scripted stand-in (not a language model)');
    const row = (name: string) => new RegExp(`\\| ${name}\\s+\\| ([^|]+?)\\s+\\|`).exec(result.stdout)?.[1];
    expect(Number(row('turns'))).toBeGreaterThanOrEqual(30);
    expect(Number(row('reminders'))).toBeGreaterThan(0);
    expect(Number(row('memory writes'))).toBeGreaterThan(0);
    expect(row('history mode switches')).toBe('phase1 → phase2');
    expect(Number(row('compactions'))).toBeGreaterThan(0);
    expect(row('prompt tokens per request')).toMatch(/^min [\d,]+ · median [\d,]+ · max [\d,]+$/);
    expect(row('with the full history')).toMatch(/\d+ % saved/);
    expect(row('facts asked at the end')).toBe('5 / 5 answered from memory');
    expect(result.stdout).toMatch(/Replay:\s+node \S*cli\/bin\.js viz --session [0-9a-f-]{36}/);
  });

  it("--turns sets the conversation's length (the facts still asked last); a bad count is a usage error", async () => {
    const long = await cli(['demo', '--quiet', '--turns', '45', '--home', tempHome()], { cwd: tempHome() });
    expect(long.code, long.stderr).toBe(0);
    const turns = (out: string) => Number(/\| turns\s+\| ([^|]+?)\s+\|/.exec(out)?.[1]);
    expect(turns(long.stdout)).toBe(45);
    expect(long.stdout).toMatch(/facts asked at the end\s*\|\s*5 \/ 5/);
    const short = await cli(['demo', '--quiet', '--turns', '12', '--home', tempHome()], { cwd: tempHome() });
    expect(turns(short.stdout)).toBe(12);
    const bad = await cli(['demo', '--turns', 'many'], { cwd: tempHome() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--turns must be a whole number from 10 to 2000, got "many"');
  });

  it("round 3 new user: keeps its session in a home of its own, never the user's, and says where", async () => {
    const userHome = tempHome();
    const tmp = tempHome();
    const env = { HOME: userHome, WORKMEM_HOME: join(userHome, 'sessions-home'), TMPDIR: tmp };
    // The shortest demo: where it keeps its session does not depend on its length.
    const result = await cli(['demo', '--quiet', '--turns', '10'], { env, cwd: tempHome() });
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(userHome)).toEqual([]); // neither ~/.workmem nor WORKMEM_HOME
    expect(readdirSync(tmp)).toEqual([]); // its temporary home is gone (issue 36)
    // --home keeps it, for the replay.
    const home = join(tempHome(), 'demo home');
    const kept = await cli(['demo', '--quiet', '--turns', '10', '--home', home], { env, cwd: tempHome() });
    expect(kept.stdout).toContain(`Its session is kept in ${home} (--home <dir> to choose another), not in your sessions.`);
    const id = /Replay:\s+node \S+ viz --session ([0-9a-f-]{36}) --home '([^']+)'/.exec(kept.stdout);
    expect(id?.[2]).toBe(home);
    const shown = await cli(['sessions', 'show', id![1]!, '--home', home], { env });
    expect(shown.stdout).toContain(`Session ${id![1]} (workmem demo)`);
  });
});

describe('chat', () => {
  it('reads lines, streams answers, and answers slash commands', async () => {
    const input =
      ['My dog is Rex.', '/memory', '/mode phase1', '/mode', '/detail', '/bogus', 'What is my dog?', '/exit', 'never sent'].join('\n') +
      '\n';
    const result = await cli(['chat'], { env, cwd: tempHome(), input });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Noted: your dog is Rex.');
    expect(result.stdout).toContain('# Working Memory');
    expect(result.stdout).toContain('history mode pinned to phase1');
    expect(result.stdout).toContain('history mode: phase1 (pinned)');
    expect(result.stdout).toContain('unknown command /bogus');
    expect(result.stdout).toContain('Your dog is Rex.');
    expect(result.stdout).not.toContain('never sent');
    expect(result.stdout).toMatch(/\[workmem-test · [\d,]+ \/ 32,768 tokens/);
  });
});

describe('bad input', () => {
  it('one clear line each, the right exit code, no stack trace unless --debug', async () => {
    const unknownCommand = await cli(['frobnicate']);
    expect(unknownCommand).toMatchObject({ code: 2, stdout: '' });
    expect(unknownCommand.stderr).toBe(
      'workmem: unknown command "frobnicate"; the commands are chat, run, rpc, sessions, memory, demo, eval, serve, viz (see workmem --help)\n',
    );

    const unknownFlag = await cli(['run', '--frobnicate', 'x'], { env });
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toBe('workmem run: unknown option --frobnicate (see workmem run --help)\n');

    const noKey = await cli(['run', 'hello'], { env: { WORKMEM_HOME: tempHome() } });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toBe(
      'workmem run: no API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to a local OpenAI-compatible server (vLLM, llama.cpp, Ollama, …)\n',
    );

    const offlineHome = tempHome();
    writeFileSync(join(offlineHome, 'config.json'), JSON.stringify({ maxRetries: 0 }));
    const unreachable = await cli(['run', 'hello', '--base-url', 'http://127.0.0.1:9/v1'], { env: { WORKMEM_HOME: offlineHome } });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/the connection to the server failed/);
    expect(unreachable.stderr).not.toMatch(/\n\s+at /);

    const unknownSession = await cli(['run', '--session', 'deadbeef', 'hi'], { env });
    expect(unknownSession.code).toBe(2);
    expect(unknownSession.stderr).toMatch(/^workmem run: no session with id deadbeef under .*\n$/);

    const badConfigHome = tempHome();
    writeFileSync(join(badConfigHome, 'config.json'), JSON.stringify({ contextWindow: 'big' }));
    const badConfig = await cli(['run', 'hi'], { env: { ...env, WORKMEM_HOME: badConfigHome } });
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr).toMatch(/config\.json: contextWindow = "big" is invalid/);

    const badFlag = await cli(['run', 'hi', '--context-window', 'lots'], { env });
    expect(badFlag.stderr).toMatch(/--context-window = "lots" is invalid/);
    const badEnv = await cli(['run', 'hi'], { env: { ...env, WM_MAX_ROUNDS: 'often' } });
    expect(badEnv).toMatchObject({ code: 2, stderr: expect.stringMatching(/WM_MAX_ROUNDS="often" is invalid/) });

    const debug = await cli(['run', '--session', 'deadbeef', 'hi', '--debug'], { env });
    expect(debug.stderr).toMatch(/\n\s+at /);
    const vizUnknown = await cli(['viz', '--session', 'deadbeef'], { env });
    expect(vizUnknown).toMatchObject({ code: 2, stderr: expect.stringMatching(/^workmem viz: no session with id deadbeef/) });
    const vizPort = await cli(['viz', '--port', 'eighty'], { env });
    expect(vizPort).toMatchObject({ code: 2, stderr: 'workmem viz: --port "eighty" is not a port number\n' });
    const noPrompt = await cli(['run'], { env });
    expect(noPrompt).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^workmem run: give the prompt, e.g. workmem run "What changed\?".*\(stdin was empty\)\n$/),
    });
  });

  it('round 3 new user: run --help shows -c/--continue and --session, and that without them each run starts a new session', async () => {
    const help = await cli(['run', '--help'], { env });
    expect(help.stdout).toMatch(/^workmem run "<prompt>" \[--json\] \[--continue \| --session <id> \| --no-session\]$/m);
    expect(help.stdout).toMatch(/^  -c, --continue\s+continue the newest session of this directory$/m);
    expect(help.stdout).toMatch(/^  --session <id>\s+continue a given session$/m);
    expect(help.stdout).toContain('Each run starts a new session\nunless -c or --session continues one');
  });

  it('--help works on every command', async () => {
    for (const command of ['chat', 'run', 'rpc', 'sessions', 'memory', 'demo', 'viz']) {
      const help = await cli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(new RegExp(`^workmem ${command}`));
    }
    const main = await cli(['--help']);
    expect(main).toMatchObject({ code: 0 });
    expect(main.stdout).toContain('Commands:');
  });
});

describe('examples', () => {
  it('the rpc client drives workmem rpc as a child process', async () => {
    const run = await runRpcClient({
      cli: CLI,
      prompts: ['My colour is teal.', 'What is my colour?'],
      env: { PATH: process.env.PATH, ...env },
      cwd: tempHome(),
    });
    expect(run.answers).toEqual(['Noted: your colour is teal.', 'Your colour is teal.']);
    expect(run.memory).toContain('- colour: teal');
  });

  it('the HTTP service hosts sessions and streams each turn as server-sent events', async () => {
    const service = await startService({ llm: openaiChat({ baseURL: server.baseURL, model: 'workmem-test', env: {} }), home: tempHome() });
    try {
      const create = async () =>
        ((await (await fetch(`${service.url}/sessions`, { method: 'POST', body: '{}' })).json()) as { id: string }).id;
      const [a, b] = await Promise.all([create(), create()]);
      const ask = async (id: string, text: string) => {
        const res = await fetch(`${service.url}/sessions/${id}/prompt`, { method: 'POST', body: JSON.stringify({ text }) });
        expect(res.headers.get('content-type')).toBe('text/event-stream');
        const body = await res.text();
        return body
          .split('\n\n')
          .filter(Boolean)
          .map((block) => JSON.parse(block.split('\n')[1]!.slice(6)) as { type: string; text?: string });
      };
      const [ea, eb] = await Promise.all([ask(a!, 'My pet is a cat.'), ask(b!, 'My pet is a parrot.')]);
      expect(ea[0]!.type).toBe('turn_start');
      expect(ea.at(-1)).toMatchObject({ type: 'turn_end', text: 'Noted: your pet is a cat.' });
      expect(eb.at(-1)).toMatchObject({ type: 'turn_end', text: 'Noted: your pet is a parrot.' });
      expect((await ask(a!, 'What is my pet?')).at(-1)).toMatchObject({ text: 'Your pet is a cat.' });
      const missing = await fetch(`${service.url}/sessions/nope/prompt`, { method: 'POST', body: '{}' });
      expect(missing.status).toBe(404);
    } finally {
      await service.close();
    }
    mkdirSync(join(tempHome(), 'x'));
  });
});
