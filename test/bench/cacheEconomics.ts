/**
 * Cache economics (issue 16): the share of input tokens a provider's prompt cache serves
 * over a long session, as workmem/testing's test server computes it (automatic: OpenAI's,
 * from 1,024 tokens in 128-token increments; explicit: Anthropic-style breakpoints), for
 * workmem in phase 1 pinned, auto (phase 1 → 2) and phase 1 with compactions, with each
 * memoryPosition, and for two usual peers in the same run (the eval's, src/eval/peerAgent.ts):
 * a naive agent that sends its full history, and one that summarises at 75 % of the window. Two profiles: workmem's own prompt
 * alone, and embedded in a host agent with instructions and tools of its own (hostAgent.ts),
 * which the peers then send too. Per compaction: the share of the next request sent uncached,
 * and of its prefix before the history (tools, system prompt, the memory where it goes first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { aiSdkModel } from '../../src/aiSdk/index.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import type { LLM } from '../../src/llm/llm.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import { createSession } from '../../src/session/index.js';
import { protocolFollower, startTestServer, type PromptCaching, type TestServer } from '../../src/testing/index.js';
import { median, type Row } from './harness.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { memoryPlacement } from '../../src/settings/settings.js';
import { HOST_INSTRUCTIONS, hostTools } from './hostAgent.js';
import { peerAgent } from '../../src/eval/peerAgent.js';
import { SUMMARIZER_MARK } from '../../src/compaction/summarizer.js';

type Caching = Exclude<PromptCaching, 'off'>;
/** workmem's prompt alone, or embedded in a host agent with its own instructions and tools. */
type Profile = 'bare' | 'host';
/** The settings compared: the defaults, each memoryPosition, and the cache-aware set. */
type CacheSettings = Pick<SettingsOverrides, 'memoryPosition' | 'recentTurnsStep' | 'fallbackTarget'>;
const CONFIGS: [string, CacheSettings][] = [
  ['', {}],
  [', memory after history', { memoryPosition: 'after-history' }],
  [', memory by phase', { memoryPosition: 'by-phase' }],
  [
    ', cache-aware (by phase, step 6, fallback to recent turns)',
    // Step 6: of 1, 2, 4, 6 and 8, the lowest bill in auto mode for both profiles and kinds of
    // caching (8 the same: the memory changes before the window reaches it).
    { memoryPosition: 'by-phase', recentTurnsStep: 6, fallbackTarget: 'recent-turns' },
  ],
];
const WINDOW = 32_000;
const FALLBACK = 0.75;

interface CacheRun {
  input: number;
  cached: number;
  /** Per compaction: uncached / input of the first request after it. */
  afterCompaction: number[];
  /** Per compaction: the uncached tokens of that request. */
  afterCompactionUncached: number[];
  /**
   * Per compaction: of that request's tokens before its history (tools, system prompt, and
   * the memory where it goes first), the share not served from the cache.
   */
  prefixUncached: number[];
  /** The first request's prompt tokens, in the server's count (system message, tools, memory, the first question). */
  firstRequest: number;
  /** Compactions by reason, e.g. "llm 2, horizon 1". */
  reasons: string;
}

/** The user's side of the session: facts, questions, topics, as in the token-efficiency runs. */
function userText(t: number, turns: number): string {
  const factsUntil = Math.floor(turns * 0.8);
  if (t <= factsUntil && t % 10 === 3)
    return `My fact ${Math.floor(t / 10)} is V${Math.floor(t / 10) * 37 + 11}. ${'Some context for it. '.repeat(6)}`;
  if (t > factsUntil && t % 2 === 0) return `What is my fact ${(t * 7) % Math.max(1, Math.floor(factsUntil / 10))}?`;
  return `Tell me about topic ${t}: ${'details and more details '.repeat(8)}`;
}

/** The server's record of each compaction's next request, and its prefix before the history (our count). */
interface Compaction {
  request: number;
  prefix: number;
  /** Who compacted: the model (llm), the fallback, the horizon (history phase 2 no longer sends), a summarising peer. */
  reason: string;
}

function totals(server: TestServer, compactions: Compaction[]): CacheRun {
  const answered = server.requests.filter((r) => r.status === 200);
  const after = compactions.flatMap((c) => {
    const r = server.requests[c.request];
    return r && r.status === 200 ? [{ r, prefix: c.prefix }] : [];
  });
  return {
    input: answered.reduce((n, r) => n + r.promptTokens, 0),
    cached: answered.reduce((n, r) => n + r.cachedTokens, 0),
    afterCompaction: after.map(({ r }) => (r.promptTokens - r.cachedTokens) / r.promptTokens),
    afterCompactionUncached: after.map(({ r }) => r.promptTokens - r.cachedTokens),
    prefixUncached: after.map(({ r, prefix }) => Math.max(0, prefix - r.cachedTokens) / prefix),
    firstRequest: answered[0]?.promptTokens ?? 0,
    reasons: [...compactions.reduce((n, c) => n.set(c.reason, (n.get(c.reason) ?? 0) + 1), new Map<string, number>())]
      .map(([reason, count]) => `${reason} ${count}`)
      .join(', '),
  };
}

function client(server: TestServer, caching: Caching): LLM {
  if (caching === 'automatic')
    return openaiChat({ baseURL: server.baseURL, apiKey: 'bench', model: 'workmem-test', contextWindow: WINDOW, env: {} });
  const provider = createOpenAICompatible({ name: 'workmem-bench', baseURL: server.baseURL, apiKey: 'bench', includeUsage: true });
  return aiSdkModel(provider.chatModel('workmem-test'), { caching: 'explicit', contextWindow: WINDOW });
}

/** workmem itself, over HTTP to the test server, with the client that caching calls for. */
async function workmemRun(
  turns: number,
  caching: Caching,
  kind: 'phase1' | 'auto' | 'compactions',
  cacheSettings: CacheSettings,
  profile: Profile,
): Promise<CacheRun> {
  const server = await startTestServer({ policy: protocolFollower({ seed: 13, compacts: kind === 'auto' }), promptCaching: caching });
  const home = mkdtempSync(join(tmpdir(), 'workmem-bench-cache-'));
  try {
    const llm = client(server, caching);
    // Phase 1 pinned never compacts in a window this large; with compactions, the fallback runs at 75 % of 32k.
    const big = kind === 'phase1' ? { contextWindow: 10_000_000 } : {};
    const session = await createSession({
      llm: big.contextWindow ? Object.assign(Object.create(llm) as LLM, { contextWindow: big.contextWindow }) : llm,
      home,
      cwd: '/bench',
      env: {},
      trace: false,
      settings: kind === 'auto' ? cacheSettings : { injectHistory: true, ...cacheSettings },
      ...(profile === 'host' ? { instructions: HOST_INSTRUCTIONS, tools: hostTools() } : {}),
    });
    const compactions: Compaction[] = [];
    let compacted: string | null = null;
    session.on('compaction_end', (e) => void (e.replaced > 0 && (compacted = e.reason)));
    // The request built right after a compaction is the next one the server receives.
    session.on('prompt_built', (e) => {
      if (!compacted) return;
      const reason = compacted;
      compacted = null;
      const memoryFirst = memoryPlacement(cacheSettings.memoryPosition, e.mode) === 'before-history';
      compactions.push({ request: server.requests.length, prefix: e.tokens.system + (memoryFirst ? e.tokens.memory : 0), reason });
    });
    for (let t = 1; t <= turns; t++) await session.prompt(userText(t, turns));
    await session.close();
    return totals(server, compactions);
  } finally {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * A peer agent without workmem (src/eval/peerAgent.ts, the eval's): a system prompt and its
 * whole history each turn, the breakpoints where such agents put them (after the system
 * prompt, on the last message). With `summariseAt`, history that would reach that share of
 * the window is summarised (all but the last 3 turns, by a request to the same server) and
 * replaced by the summary.
 */
async function peerRun(turns: number, caching: Caching, summariseAt: number | null, profile: Profile): Promise<CacheRun> {
  const server = await startTestServer({
    policy: (body) =>
      String(body.messages[0]?.content ?? '').startsWith(SUMMARIZER_MARK)
        ? {
            content: `## Goal\n- Help.\n\n## Progress\n- ${'the user stated facts and asked about topics; '.repeat(40)}\n\n## Key facts\n- none`,
          }
        : { content: 'Noted; here is my answer about that.' },
    promptCaching: caching,
  });
  const own = `You are a helpful assistant for a software project. ${'Follow the project rules, answer briefly, and keep track of what the user says. '.repeat(40)}`;
  const tools = profile === 'host' ? hostTools() : [];
  const system = profile === 'host' ? `${HOST_INSTRUCTIONS}\n\n${own}` : own;
  const counter = await loadTokenCounter('gpt-4o');
  const peer = peerAgent({ llm: client(server, caching), counter, system, tools, summariseAt, contextWindow: WINDOW });
  const compactions: Compaction[] = [];
  const prefix = counter.requestBase(
    system,
    tools.map((t) => t.spec),
  );
  const signal = new AbortController().signal;
  try {
    for (let t = 1; t <= turns; t++) {
      const turn = await peer.prompt(userText(t, turns), signal);
      // The summary is made before the turn's request: the turn's answer is the first request after it.
      if (turn.summarised) compactions.push({ request: server.requests.length - 1, prefix, reason: 'summary' });
    }
    return totals(server, compactions);
  } finally {
    await server.close();
  }
}

export async function cacheEconomics(turns: number, profiles: readonly Profile[] = ['bare', 'host']): Promise<Row[]> {
  const rows: Row[] = [];
  for (const profile of profiles)
    for (const caching of ['explicit', 'automatic'] as const) {
      const runs: [string, CacheRun, boolean][] = [];
      for (const [label, settings] of CONFIGS) {
        runs.push(
          [`workmem, phase 1 pinned${label}`, await workmemRun(turns, caching, 'phase1', settings, profile), true],
          [`workmem, auto (phase 1 → 2)${label}`, await workmemRun(turns, caching, 'auto', settings, profile), true],
          [
            `workmem, phase 1 with compactions (${WINDOW / 1000}k window)${label}`,
            await workmemRun(turns, caching, 'compactions', settings, profile),
            true,
          ],
        );
      }
      runs.push(
        ['peer: naive full history', await peerRun(turns, caching, null, profile), false],
        [`peer: summarise at ${FALLBACK * 100} %`, await peerRun(turns, caching, FALLBACK, profile), false],
      );
      const prompt = profile === 'host' ? 'in a host agent' : "workmem's prompt alone";
      for (const [name, run, ours] of runs) {
        const share = run.input ? run.cached / run.input : 0;
        rows.push({
          metric: `Cached share of input tokens, ${turns} turns, ${caching} caching, ${prompt}`,
          case: name,
          median: share * 100,
          p99: null,
          unit: '%',
          target: ours ? '≥ 90 %' : null,
          met: ours ? share >= 0.9 : null,
          // What matters for the bill too: uncached tokens, and cached reads at a tenth (Anthropic's price; OpenAI's is ¼–½).
          note:
            `${run.input.toLocaleString('en-US')} input tokens, ${(run.input - run.cached).toLocaleString('en-US')} uncached; ` +
            `billed as ${Math.round(run.input - 0.9 * run.cached).toLocaleString('en-US')} with cached reads at 10 %; first request ${run.firstRequest.toLocaleString('en-US')} tokens`,
        });
        if (run.afterCompaction.length)
          rows.push({
            metric: `Uncached share of the request after a compaction, ${caching} caching, ${prompt}`,
            case: `${name}: ${run.afterCompaction.length} compactions (${run.reasons})`,
            median: median(run.afterCompaction) * 100,
            p99: Math.max(...run.afterCompaction) * 100,
            unit: '%',
            target: ours ? '≤ 10 % each' : null,
            met: ours ? Math.max(...run.afterCompaction) <= 0.1 : null,
            note: `(p99 column: the worst compaction) median ${Math.round(median(run.afterCompactionUncached)).toLocaleString('en-US')} tokens uncached`,
          });
        // The other reading of "re-sending ≤ 10 % of the prefix": the part before the history, which a compaction leaves as it was.
        if (run.prefixUncached.length)
          rows.push({
            metric: `Uncached share of the prefix before the history after a compaction, ${caching} caching, ${prompt}`,
            case: `${name}: ${run.prefixUncached.length} compactions (${run.reasons})`,
            median: median(run.prefixUncached) * 100,
            p99: Math.max(...run.prefixUncached) * 100,
            unit: '%',
            target: ours ? '≤ 10 % each' : null,
            met: ours ? Math.max(...run.prefixUncached) <= 0.1 : null,
            note: '(p99 column: the worst compaction) tools, system prompt, and the memory where it goes first',
          });
      }
    }
  return rows;
}

/** `tsx test/bench/cacheEconomics.ts [turns] [bare|host]`: these rows alone. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { table } = await import('./harness.js');
  const profile = process.argv[3] as Profile | undefined;
  process.stdout.write(`${table(await cacheEconomics(Number(process.argv[2] ?? 500), profile ? [profile] : undefined))}\n`);
}
