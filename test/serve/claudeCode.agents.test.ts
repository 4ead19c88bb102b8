/**
 * Claude Code (@anthropic-ai/claude-code), driven headless against `workmem serve`:
 * installed from the registry into a cache of its own (its native binary comes from an
 * optional dependency, run through the package's own launcher, cli-wrapper.cjs, since the
 * install runs no scripts; the binary carries its own runtime, so the package's `node >= 22`
 * does not bind it), pointed at the proxy by ANTHROPIC_BASE_URL with the proxy's token as its key, its
 * telemetry, error reports and update checks off, run with `-p` one turn per process and
 * `--continue` after the first, offline. It speaks the Messages API with adaptive thinking
 * on, so its tool loop only goes on if the proxy sends each loop's thinking back before its
 * calls (the test server refuses it otherwise). The proxy keeps one session across its
 * processes: the memory written through the proxy, its own Bash call round-tripping, none of
 * workmem's calls reaching it.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { installedOnce } from '../installedOnce.js';
import { agentPolicy, COMMAND_OUTPUT } from './agentPolicy.js';
import { proxies, sessionState } from './proxyHarness.js';
import { runAgent, type AgentRun } from './agentRuns.js';

const CLAUDE_VERSION = '2.1.332';
const CLAUDE_CLI = join('node_modules', '@anthropic-ai', 'claude-code', 'cli-wrapper.cjs');
let CLAUDE = '';
const proxied = proxies();

beforeAll(() => {
  CLAUDE = join(
    installedOnce(`workmem-test-claude-code-${CLAUDE_VERSION}`, [`@anthropic-ai/claude-code@${CLAUDE_VERSION}`], CLAUDE_CLI),
    CLAUDE_CLI,
  );
});

const claude = (args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<AgentRun> =>
  runAgent(process.execPath, [CLAUDE, ...args], { env, cwd });

describe('Claude Code, an agent from npm, through workmem serve', () => {
  it('runs turn after turn with its own tools, continued in one session; the proxy keeps its memory', async () => {
    const { proxy, server, home } = await proxied({ server: { policy: agentPolicy(11) }, proxy: { contextWindow: 200_000 } });
    const work = mkdtempSync(join(tmpdir(), 'workmem-claude-'));
    const project = join(work, 'project');
    mkdirSync(project);
    const env = {
      PATH: process.env.PATH,
      HOME: work,
      ANTHROPIC_BASE_URL: proxy.url.replace(/\/v1$/, ''),
      ANTHROPIC_API_KEY: proxy.token,
      // Its side requests (titles, summaries) go to the same stand-in, by name.
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'workmem-test',
      ANTHROPIC_SMALL_FAST_MODEL: 'workmem-test',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
    const turns = [
      'My plant1 is rose1.',
      'My plant2 is rose2.',
      'Run the command echo hello-from-claude.',
      'My plant3 is rose3.',
      'What is my plant1?',
      'What is my plant2?',
    ];
    const outputs: string[] = [];
    for (const [i, text] of turns.entries()) {
      const args = ['-p', text, '--model', 'workmem-test', '--allowedTools', 'Bash(echo:*)', ...(i ? ['--continue'] : [])];
      const run = await claude(args, env, project);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      outputs.push(run.stdout.trim());
    }
    expect(outputs[2]).toContain(COMMAND_OUTPUT);
    expect(outputs[2]).toContain('hello-from-claude');
    expect(outputs[4]).toContain('rose1');
    expect(outputs[5]).toContain('rose2');

    expect(server.requests.every((r) => r.protocol === 'messages')).toBe(true);
    // Its thinking was on; every request the proxy sent was one Anthropic would take (the test server refuses the rest).
    expect(server.requests.some((r) => (r.raw as { thinking?: unknown }).thinking)).toBe(true);
    expect(server.requests.filter((r) => r.status !== 200)).toEqual([]);
    // The conversation is one session (its side requests, if any, are others), continued run after run.
    const sessionDir = join(home, 'sessions');
    const sessions = readdirSync(sessionDir).flatMap((cwd) => readdirSync(join(sessionDir, cwd)));
    const states = await Promise.all(sessions.map((id) => sessionState(id, { home })));
    const main = states.find((s) => s.overview.includes('rose3'));
    expect(main).toBeDefined();
    const calls = main!.log.flatMap((e) =>
      e.type === 'message' && e.message.role === 'assistant' ? (e.message.tool_calls ?? []).map((c) => c.function.name) : [],
    );
    expect(calls).toContain('Bash');
    expect(calls).toContain('write');
    expect(main!.log.filter((e) => e.type === 'message' && e.message.role === 'user').length).toBeGreaterThanOrEqual(turns.length);
    // Claude Code's own transcript holds its Bash call and none of workmem's.
    const projects = join(work, '.claude', 'projects');
    const transcript = readdirSync(projects, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.jsonl'))
      .map((f) => readFileSync(join(projects, f), 'utf8'))
      .join('\n');
    expect(transcript).toContain('"name":"Bash"');
    expect(transcript).toContain('hello-from-claude');
    for (const name of WORKMEM_TOOL_NAMES) expect(transcript).not.toContain(`"name":"${name}"`);
    expect(transcript).not.toContain('working-memory/overview.md');
  });
});
