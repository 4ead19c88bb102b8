/**
 * An agent program from npm that no one here wrote, driven headless against the proxy's base
 * URL: pi (@mariozechner/pi-coding-agent, a coding agent CLI), installed from the registry
 * into a cache of its own (never a dependency of workmem: it brings 200 MB and install
 * scripts), configured as its docs say for an OpenAI-compatible server (models.json,
 * api "openai-completions"), run with `-p` (print mode) one turn per process, continuing its
 * own session (`-c`), offline, with its default tools: its read/write/edit have the names of
 * workmem's own, which the proxy then sends as workmem_read, workmem_write, … (docs/proxy.md,
 * "Tools"). Across its processes the proxy keeps one session: memory written through the
 * proxy, pi's own tool call round-tripping, and none of workmem's calls reaching pi.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { proxies, sessionState } from './proxyHarness.js';
import { runAgent, type AgentRun } from './agentRuns.js';
import { installedOnce } from '../installedOnce.js';

const PI_VERSION = '0.73.1';
const PI_CLI = join('node_modules', '@mariozechner', 'pi-coding-agent', 'dist', 'cli.js');
let PI = '';
const proxied = proxies();

beforeAll(() => {
  PI = join(installedOnce(`workmem-test-pi-${PI_VERSION}`, [`@mariozechner/pi-coding-agent@${PI_VERSION}`], PI_CLI), PI_CLI);
});

const pi = (args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<AgentRun> =>
  runAgent(process.execPath, [PI, ...args], { env, cwd });

describe('pi, an agent from npm, through workmem serve', () => {
  it('runs headless turn after turn against the base URL; the proxy keeps its session', async () => {
    const { proxy, server, home } = await proxied();
    const work = mkdtempSync(join(tmpdir(), 'workmem-pi-'));
    const agentDir = join(work, 'agent');
    mkdirSync(agentDir);
    writeFileSync(
      join(agentDir, 'models.json'),
      JSON.stringify({
        providers: {
          workmem: {
            baseUrl: proxy.url,
            api: 'openai-completions',
            apiKey: proxy.token,
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [{ id: 'workmem-test', contextWindow: 32_000, maxTokens: 2_000 }],
          },
        },
      }),
    );
    const env = { PATH: process.env.PATH, HOME: work, PI_CODING_AGENT_DIR: agentDir };
    const common = [
      '--provider',
      'workmem',
      '--model',
      'workmem-test',
      '--offline',
      '--no-extensions',
      '--no-skills',
      '--no-context-files',
      '--session-dir',
      join(work, 'sessions'),
    ];
    const turns = [
      'My plant1 is rose1.',
      'My plant2 is rose2.',
      'Use the bash tool with echo hi.',
      'What is my plant1?',
      'What is my plant2?',
    ];
    const answers: string[] = [];
    for (const [i, text] of turns.entries()) {
      const run = await pi([...common, ...(i ? ['-c'] : []), '-p', text], env, work);
      expect(run.code, run.stderr).toBe(0);
      answers.push(run.stdout.trim());
    }
    expect(answers[3]).toContain('rose1');
    expect(answers[4]).toContain('rose2');

    // One session for the conversation, found by what it holds (its first request passed through, the second opened it).
    expect(server.requests.length).toBeGreaterThanOrEqual(turns.length);
    const sessionDir = join(home, 'sessions');
    const sessions = readdirSync(sessionDir).flatMap((cwd) => readdirSync(join(sessionDir, cwd)));
    expect(sessions.length).toBe(1);
    const { log, overview } = await sessionState(sessions[0]!, { home });
    expect(overview).toContain('rose2');
    const calls = log.flatMap((e) =>
      e.type === 'message' && e.message.role === 'assistant' ? (e.message.tool_calls ?? []).map((c) => c.function.name) : [],
    );
    expect(calls).toContain('bash');
    expect(calls).toContain('workmem_write');
    expect(log.some((e) => e.type === 'message' && e.message.role === 'tool' && calls.includes('bash'))).toBe(true);
    expect(log.filter((e) => e.type === 'branch')).toEqual([]);
    // pi's own session holds its bash call and none of workmem's.
    const piSessions = readdirSync(join(work, 'sessions'), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.jsonl'));
    const piLog = piSessions.map((f) => readFileSync(join(work, 'sessions', f), 'utf8')).join('\n');
    expect(piLog).toContain('bash');
    expect(piLog).not.toContain('working-memory/overview.md');
  });
});
