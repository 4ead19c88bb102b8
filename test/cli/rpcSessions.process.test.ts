/**
 * workmem rpc, built and spawned: switching and starting sessions leave the current one
 * untouched unless they succeed, a line over the limit is refused and the process keeps
 * serving, what it returns is masked, and a prompt it pins stays pinned when another process
 * opens the session. (Run `npm run build` before running this file alone.)
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../src/testing/index.js';
import { cliPath, runCli as cli } from './cliProcess.js';
import { cliServerEnv, tempHome } from '../helpers.js';

let server: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  ({ server, env } = await cliServerEnv());
});
afterAll(async () => server.close());

type Line = Record<string, unknown> & { type: string };

/** A running `workmem rpc`: send a command, wait for a line that matches. */
class RpcChild {
  readonly lines: Line[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private waiters: { match: (l: Line) => boolean; resolve: (l: Line) => void }[] = [];

  constructor(env: NodeJS.ProcessEnv, cwd: string) {
    this.child = spawn(process.execPath, [cliPath(), 'rpc'], { env: { PATH: process.env.PATH, ...env }, cwd });
    let buffer = '';
    this.child.stdout.on('data', (d) => {
      buffer += d;
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        const line = JSON.parse(buffer.slice(0, at)) as Line;
        buffer = buffer.slice(at + 1);
        this.lines.push(line);
        for (const w of this.waiters.filter((w) => w.match(line))) w.resolve(line);
        this.waiters = this.waiters.filter((w) => !w.match(line));
      }
    });
  }

  wait(match: (l: Line) => boolean): Promise<Line> {
    const seen = this.lines.find(match);
    return seen ? Promise.resolve(seen) : new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  async send(command: Record<string, unknown>): Promise<Line> {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
    return this.wait((l) => l.type === 'response' && l.id === command.id);
  }

  async end(): Promise<void> {
    this.child.stdin.end();
    await new Promise((resolve) => this.child.on('close', resolve));
  }
}

function sessionDirs(home: string): string[] {
  const root = join(home, 'sessions');
  return readdirSync(root).flatMap((cwd) => readdirSync(join(root, cwd)));
}

describe('switch_session and new_session', () => {
  it('a failed switch keeps the current session and leaves no stray session; a good one names both ids', async () => {
    const home = tempHome();
    const rpc = new RpcChild({ ...env, WORKMEM_HOME: home }, tempHome());
    const before = (await rpc.send({ type: 'get_state', id: 1 })).data as { id: string };
    const failed = await rpc.send({ type: 'switch_session', id: 2, sessionId: 'deadbeef' });
    expect(failed).toMatchObject({ success: false, error: expect.stringMatching(/no session with id deadbeef.*still in session/) });
    expect(((await rpc.send({ type: 'get_state', id: 3 })).data as { id: string }).id).toBe(before.id);
    expect(sessionDirs(home)).toEqual([before.id]);

    const created = await rpc.send({ type: 'new_session', id: 4, name: 'second' });
    expect(created).toMatchObject({ success: true, data: { previousSessionId: before.id } });
    const second = (created.data as { sessionId: string }).sessionId;
    expect(second).not.toBe(before.id);
    const back = await rpc.send({ type: 'switch_session', id: 5, sessionId: before.id.slice(0, 8) });
    expect(back).toMatchObject({ success: true, data: { sessionId: before.id, previousSessionId: second } });
    const prompt = await rpc.send({ type: 'prompt', id: 6, text: 'My name is Ada.' });
    expect(prompt).toMatchObject({ success: true, data: { sessionId: before.id } });
    await rpc.wait((l) => l.type === 'turn_end');
    await rpc.end();
    expect(sessionDirs(home).sort()).toEqual([before.id, second].sort());
  });

  it('new_session while a turn runs is refused, naming the turn; the turn runs to its end', async () => {
    const slow = await startTestServer({
      policy: () => ({ content: 'a slow answer, streamed in small pieces' }),
      chunkChars: 2,
      chunkDelayMs: 30,
    });
    const home = tempHome();
    const rpc = new RpcChild({ ...env, WORKMEM_HOME: home, OPENAI_BASE_URL: slow.baseURL }, tempHome());
    const prompt = await rpc.send({ type: 'prompt', id: 'p', text: 'Talk slowly.' });
    const promptId = (prompt.data as { promptId: string }).promptId;
    await rpc.wait((l) => l.type === 'message_delta');
    const refused = await rpc.send({ type: 'new_session', id: 'n' });
    expect(refused.success).toBe(false);
    expect(refused.error).toContain(promptId);
    expect(refused.error).toMatch(/turn 1 is running/);
    const switched = await rpc.send({ type: 'switch_session', id: 's', sessionId: 'deadbeef' });
    expect(switched.success).toBe(false);
    expect(await rpc.wait((l) => l.type === 'turn_end')).toMatchObject({ status: 'done', promptId });
    await rpc.end();
    await slow.close();
    expect(sessionDirs(home)).toHaveLength(1);
  });
});

describe('line limit', () => {
  it('a line over 16 MB gets one error and is skipped; the next command is answered', async () => {
    const input = `${'x'.repeat(17 * 1024 * 1024)}\n${JSON.stringify({ type: 'get_state', id: 'after' })}\n`;
    const result = await cli(['rpc'], { env: { ...env, WORKMEM_HOME: tempHome() }, cwd: tempHome(), input });
    expect(result.code).toBe(0);
    const responses = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.type === 'response');
    expect(responses.map((r) => [r.command, r.success, r.id ?? null])).toEqual([
      ['unknown', false, null],
      ['get_state', true, 'after'],
    ]);
    expect(responses[0]!.error).toBe('line 1 is longer than 16 MB; skipped');
  });
});

describe('masking', () => {
  it('get_messages and list_sessions never return the API key', async () => {
    const key = 'sk-test-abcdefghijklmnopqrstuvwxyz012345';
    const rpc = new RpcChild({ ...env, WORKMEM_HOME: tempHome(), OPENAI_API_KEY: key }, tempHome());
    await rpc.send({ type: 'new_session', id: 'n', name: `project ${key}` });
    await rpc.send({ type: 'prompt', id: 'p', text: `My key is ${key}.` });
    await rpc.wait((l) => l.type === 'turn_end');
    const messages = await rpc.send({ type: 'get_messages', id: 'm' });
    const sessions = await rpc.send({ type: 'list_sessions', id: 'l' });
    await rpc.end();
    expect(JSON.stringify(messages)).toContain('[redacted]');
    expect(JSON.stringify(messages)).not.toContain(key);
    expect(JSON.stringify(sessions)).toContain('project [redacted]');
    expect(JSON.stringify(sessions)).not.toContain(key);
  });
});

describe('pinned prompts', () => {
  it('a prompt pinned over rpc stays pinned in another process: phase 2 sends it first, after the system message', async () => {
    const home = tempHome();
    const cwd = tempHome();
    const task = 'Task: keep a list of the birds I see.';
    const first = new RpcChild({ ...env, WORKMEM_HOME: home, WM_RECENT_TURNS: '1', WM_RECENT_TURNS_STEP: '1' }, cwd);
    const { id } = (await first.send({ type: 'get_state', id: 's' })).data as { id: string };
    await first.send({ type: 'set_mode', id: 'm', mode: 'phase2' });
    expect(await first.send({ type: 'prompt', id: 'p', text: task, pin: true })).toMatchObject({ success: true });
    await first.wait((l) => l.type === 'turn_end');
    expect(first.lines.find((l) => l.type === 'message_end' && (l.message as { role: string }).role === 'user')).toMatchObject({
      pinned: true,
    });
    await first.end();

    const second = new RpcChild({ ...env, WORKMEM_HOME: home, WM_RECENT_TURNS: '1', WM_RECENT_TURNS_STEP: '1' }, cwd);
    expect(await second.send({ type: 'switch_session', id: 'w', sessionId: id })).toMatchObject({ success: true });
    for (const [n, bird] of ['a robin', 'a wren', 'a jay'].entries()) {
      await second.send({ type: 'prompt', id: bird, text: `Today I saw ${bird}.` });
      await second.wait(() => second.lines.filter((l) => l.type === 'turn_end').length === n + 1);
    }
    await second.end();
    const last = server.requests.at(-1)!.body.messages as { role: string; content: string }[];
    expect(last[1]).toEqual({ role: 'user', content: task });
    expect(last.filter((m) => m.role === 'user' && m.content.startsWith('Today I saw')).map((m) => m.content.split('\n')[0])).toEqual([
      'Today I saw a wren.',
      'Today I saw a jay.',
    ]);
  });
});
