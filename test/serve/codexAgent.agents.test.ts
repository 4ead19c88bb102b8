/**
 * Codex (@openai/codex), the agent program no one here wrote, driven headless against
 * `workmem serve`: installed from the registry into a cache of its own (its native binary
 * comes from an optional dependency; never a dependency of workmem), configured as its docs
 * say for a model provider of one's own (config.toml: `base_url` at the proxy, `wire_api =
 * "responses"`), run with `codex exec` one turn per process and `codex exec resume --last`
 * after the first, offline. The proxy keeps one session across its processes: the memory
 * written through the proxy, Codex's own exec_command call round-tripping (its output
 * quoted back), none of workmem's calls reaching Codex.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { installedOnce } from '../installedOnce.js';
import { agentPolicy, COMMAND_OUTPUT } from './agentPolicy.js';
import { proxies, sessionState } from './proxyHarness.js';
import { runAgent, type AgentRun } from './agentRuns.js';

const CODEX_VERSION = '0.171.0';
const CODEX_CLI = join('node_modules', '@openai', 'codex', 'bin', 'codex.js');
let CODEX = '';
const proxied = proxies();

beforeAll(() => {
  CODEX = join(installedOnce(`workmem-test-codex-${CODEX_VERSION}`, [`@openai/codex@${CODEX_VERSION}`], CODEX_CLI), CODEX_CLI);
});

const codex = (args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<AgentRun> =>
  runAgent(process.execPath, [CODEX, ...args], { env, cwd });

describe('Codex, an agent from npm, through workmem serve', () => {
  it('runs turn after turn with its own tools, resumed in one session; the proxy keeps its memory', async () => {
    const { proxy, server, home } = await proxied({ server: { policy: agentPolicy(7), strict: true }, proxy: { contextWindow: 64_000 } });
    const work = mkdtempSync(join(tmpdir(), 'workmem-codex-'));
    const codexHome = join(work, 'codex-home');
    const project = join(work, 'project');
    mkdirSync(codexHome);
    mkdirSync(project);
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        'model = "workmem-test"',
        'model_provider = "workmem"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        '[model_providers.workmem]',
        'name = "workmem serve"',
        `base_url = "${proxy.url}"`,
        'wire_api = "responses"',
        'env_key = "WORKMEM_SERVE_TOKEN"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
      ].join('\n'),
    );
    const env = { PATH: process.env.PATH, HOME: work, CODEX_HOME: codexHome, WORKMEM_SERVE_TOKEN: proxy.token };
    const turns = [
      'My plant1 is rose1.',
      'My plant2 is rose2.',
      'Run the command echo hello-from-codex.',
      'My plant3 is rose3.',
      'What is my plant1?',
      'What is my plant2?',
    ];
    const outputs: string[] = [];
    for (const [i, text] of turns.entries()) {
      const args = i === 0 ? ['exec', '--skip-git-repo-check', text] : ['exec', '--skip-git-repo-check', 'resume', '--last', text];
      const run = await codex(args, env, project);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      outputs.push(run.stdout.trim());
    }
    expect(outputs[2]).toContain(`${COMMAND_OUTPUT}`);
    expect(outputs[2]).toContain('hello-from-codex');
    expect(outputs[4]).toContain('rose1');
    expect(outputs[5]).toContain('rose2');

    // Codex spoke the Responses API to the proxy, and the proxy to the test server.
    expect(server.requests.length).toBeGreaterThanOrEqual(turns.length);
    expect(server.requests.every((r) => r.protocol === 'responses')).toBe(true);
    // One session for the conversation, resumed run after run.
    const sessionDir = join(home, 'sessions');
    const sessions = readdirSync(sessionDir).flatMap((cwd) => readdirSync(join(sessionDir, cwd)));
    expect(sessions.length).toBe(1);
    const { log, overview } = await sessionState(sessions[0]!, { home });
    expect(overview).toContain('rose3');
    const calls = log.flatMap((e) =>
      e.type === 'message' && e.message.role === 'assistant' ? (e.message.tool_calls ?? []).map((c) => c.function.name) : [],
    );
    expect(calls).toContain('exec_command');
    expect(calls).toContain('write');
    expect(log.filter((e) => e.type === 'message' && e.message.role === 'user').length).toBeGreaterThanOrEqual(turns.length);
    // Codex's own session holds its exec_command call and none of workmem's.
    const rollouts = readdirSync(join(codexHome, 'sessions'), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.jsonl'));
    const rollout = rollouts.map((f) => readFileSync(join(codexHome, 'sessions', f), 'utf8')).join('\n');
    expect(rollout).toContain('exec_command');
    expect(rollout).toContain('hello-from-codex');
    for (const name of WORKMEM_TOOL_NAMES) expect(rollout).not.toContain(`"name":"${name}"`);
    expect(rollout).not.toContain('working-memory/overview.md');
  });
});
