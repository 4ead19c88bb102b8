/**
 * What the tests of agents from npm share (opencode, Qwen Code, the OpenAI Agents SDK): the
 * test server with a protocol follower (the scripted model that drives their tool calls),
 * `workmem serve` on it as users run it (the built CLI), an agent's run as a child process
 * (killed only if it hangs), and the sessions the proxy's home holds afterwards.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { HANG_MS } from '../hangGuard.js';
import { tempHome } from '../helpers.js';
import { sessionState } from './proxyHarness.js';
import { serveProcesses, type ServeProcess } from './serveProcess.js';

export interface Served {
  server: TestServer;
  proxy: ServeProcess;
  /** The proxy's home: its sessions. */
  home: string;
}

/** `const served = servedAgents();` in a file: a test server and `workmem serve` on it, stopped after each test. */
export function servedAgents(): () => Promise<Served> {
  const serve = serveProcesses();
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return async () => {
    const server = await startTestServer({ policy: protocolFollower({ seed: 4 }), promptCaching: 'off' });
    servers.push(server);
    const home = tempHome();
    const proxy = await serve(['--upstream', server.baseURL, '--context-window', '128000'], { WORKMEM_HOME: home });
    return { server, proxy, home };
  };
}

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** One run of an agent's CLI, stdin closed (in print mode some read a piped stdin to its end), killed only if it hangs. */
export function runAgent(command: string, args: string[], options: { env: NodeJS.ProcessEnv; cwd: string }): Promise<AgentRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), HANG_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** The sessions of the proxy's home, each with its log and memory. */
export async function sessionsOf(home: string) {
  const root = join(home, 'sessions');
  const ids = existsSync(root) ? readdirSync(root).flatMap((cwd) => readdirSync(join(root, cwd))) : [];
  return Promise.all(ids.map(async (id) => ({ id, ...(await sessionState(id, { home })) })));
}

/** The tool names a session's log holds calls of. */
export function calledTools(log: Awaited<ReturnType<typeof sessionState>>['log']): string[] {
  return log.flatMap((e) =>
    e.type === 'message' && e.message.role === 'assistant' ? (e.message.tool_calls ?? []).map((c) => c.function.name) : [],
  );
}

/** The requests the upstream got whose first message (the instructions) starts so. */
export function requestsUnder(server: TestServer, start: string) {
  return server.requests.filter((r) => String(r.body.messages?.[0]?.content ?? '').startsWith(start));
}

/** A conversation of 8 turns: three facts, three of the agent's own tool calls between them, two questions on the facts. */
export function conversationTurns(toolCalls: readonly [string, string, string]): string[] {
  return [
    'My plant1 is rose1.',
    toolCalls[0],
    'My plant2 is rose2.',
    toolCalls[1],
    'My plant3 is rose3.',
    toolCalls[2],
    'What is my plant1?',
    'What is my plant3?',
  ];
}

/** The second conversation of the same agent: a fact of its own, then the first one's question. */
export const OTHER_TURNS = ['My tree1 is oak1.', 'What is my plant1?'] as const;

/**
 * The proxy's home holds two sessions, each with its own memory only: the first
 * conversation's facts in one, the second's in the other. The first conversation's session.
 */
export async function expectApart(home: string, expect: typeof import('vitest').expect) {
  const sessions = await sessionsOf(home);
  expect(sessions).toHaveLength(2);
  const first = sessions.find((s) => s.overview.includes('rose1'))!;
  const second = sessions.find((s) => s !== first)!;
  expect(first.overview).toContain('rose3');
  expect(first.overview).not.toContain('oak1');
  expect(second.overview).toContain('oak1');
  expect(second.overview).not.toContain('rose');
  return first;
}
