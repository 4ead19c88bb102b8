/**
 * Cache economics (issue 16): the share of input tokens a provider's prompt cache serves
 * over a long session, as workmem/testing's test server computes it (automatic: OpenAI's
 * 1,024-token blocks; explicit: Anthropic-style breakpoints), for workmem in phase 1
 * pinned, auto (phase 1 → 2) and phase 1 with compactions, each with the memory before the
 * history (the default) and after it (memoryPosition 'after-history'), and for two usual
 * peers in the same run: a naive agent that sends its full history, and one that
 * summarises at 75 % of the window. Per compaction: the share of the next request sent uncached.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { aiSdkModel } from '../../src/aiSdk/index.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import type { LLM } from '../../src/llm/llm.js';
import type { MemoryPosition } from '../../src/settings/settings.js';
import { createSession } from '../../src/session/index.js';
import { protocolFollower, startTestServer, type PromptCaching, type TestServer } from '../../src/testing/index.js';
import { median, type Row } from './harness.js';

type Caching = Exclude<PromptCaching, 'off'>;
const WINDOW = 32_000;
const FALLBACK = 0.75;

interface CacheRun {
  input: number;
  cached: number;
  /** Per compaction: uncached / input of the first request after it. */
  afterCompaction: number[];
}

/** The user's side of the session: facts, questions, topics, as in the token-efficiency runs. */
function userText(t: number, turns: number): string {
  const factsUntil = Math.floor(turns * 0.8);
  if (t <= factsUntil && t % 10 === 3)
    return `My fact ${Math.floor(t / 10)} is V${Math.floor(t / 10) * 37 + 11}. ${'Some context for it. '.repeat(6)}`;
  if (t > factsUntil && t % 2 === 0) return `What is my fact ${(t * 7) % Math.max(1, Math.floor(factsUntil / 10))}?`;
  return `Tell me about topic ${t}: ${'details and more details '.repeat(8)}`;
}

function totals(server: TestServer, compactionRequests: number[]): CacheRun {
  const answered = server.requests.filter((r) => r.status === 200);
  const afterCompaction = compactionRequests
    .map((i) => server.requests[i])
    .filter((r) => r !== undefined && r.status === 200)
    .map((r) => (r!.promptTokens - r!.cachedTokens) / r!.promptTokens);
  return {
    input: answered.reduce((n, r) => n + r.promptTokens, 0),
    cached: answered.reduce((n, r) => n + r.cachedTokens, 0),
    afterCompaction,
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
  memoryPosition: MemoryPosition,
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
      settings: kind === 'auto' ? { memoryPosition } : { injectHistory: true, memoryPosition },
    });
    const compactionRequests: number[] = [];
    session.on('compaction_end', (e) => void (e.replaced > 0 && compactionRequests.push(server.requests.length)));
    for (let t = 1; t <= turns; t++) await session.prompt(userText(t, turns));
    await session.close();
    return totals(server, compactionRequests);
  } finally {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * A peer agent without workmem: a system prompt and its whole history each turn, the
 * breakpoints where such agents put them (after the system prompt, on the last message).
 * With `summariseAt`, history over that share of the window is summarised (all but the
 * last 3 turns, by a request to the same server) and replaced by the summary.
 */
async function peerRun(turns: number, caching: Caching, summariseAt: number | null): Promise<CacheRun> {
  const server = await startTestServer({
    policy: (body) => {
      const first = String(body.messages[0]?.content ?? '');
      return first.startsWith('Summarise')
        ? { content: `Summary: ${'the user stated facts and asked about topics; '.repeat(40)}` }
        : { content: 'Noted; here is my answer about that.' };
    },
    promptCaching: caching,
  });
  const mark = caching === 'explicit' ? { cache_control: { type: 'ephemeral' } } : {};
  const system = `You are a helpful assistant for a software project. ${'Follow the project rules, answer briefly, and keep track of what the user says. '.repeat(40)}`;
  const post = async (messages: Record<string, unknown>[]) => {
    const response = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'workmem-test', messages, max_tokens: 2000 }),
    });
    const body = (await response.json()) as { choices: { message: { content: string } }[] };
    return body.choices[0]!.message.content;
  };
  let history: { role: string; content: string }[] = [];
  const compactionRequests: number[] = [];
  try {
    for (let t = 1; t <= turns; t++) {
      history.push({ role: 'user', content: userText(t, turns) });
      const messages = [{ role: 'system', content: system, ...mark }, ...history.slice(0, -1), { ...history.at(-1)!, ...mark }];
      const answer = await post(messages);
      history.push({ role: 'assistant', content: answer });
      const sent = server.requests.at(-1)!.promptTokens;
      if (summariseAt !== null && sent >= summariseAt * WINDOW) {
        const old = history.slice(0, -6);
        const summary = await post([
          { role: 'system', content: 'Summarise this conversation for the assistant that continues it.' },
          { role: 'user', content: old.map((m) => `${m.role}: ${m.content}`).join('\n') },
        ]);
        history = [
          { role: 'user', content: `[Summary of the earlier conversation]\n${summary}` },
          { role: 'assistant', content: 'Understood.' },
          ...history.slice(-6),
        ];
        compactionRequests.push(server.requests.length);
      }
    }
    return totals(server, compactionRequests);
  } finally {
    await server.close();
  }
}

export async function cacheEconomics(turns: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const caching of ['explicit', 'automatic'] as const) {
    const runs: [string, CacheRun, boolean][] = [];
    for (const position of ['before-history', 'after-history'] as const) {
      const after = position === 'after-history' ? ', memory after history' : '';
      runs.push(
        [`workmem, phase 1 pinned${after}`, await workmemRun(turns, caching, 'phase1', position), true],
        [`workmem, auto (phase 1 → 2)${after}`, await workmemRun(turns, caching, 'auto', position), true],
        [
          `workmem, phase 1 with compactions (${WINDOW / 1000}k window)${after}`,
          await workmemRun(turns, caching, 'compactions', position),
          true,
        ],
      );
    }
    runs.push(
      ['peer: naive full history', await peerRun(turns, caching, null), false],
      [`peer: summarise at ${FALLBACK * 100} %`, await peerRun(turns, caching, FALLBACK), false],
    );
    for (const [name, run, ours] of runs) {
      const share = run.input ? run.cached / run.input : 0;
      rows.push({
        metric: `Cached share of input tokens, ${turns} turns, ${caching} caching`,
        case: name,
        median: share * 100,
        p99: null,
        unit: '%',
        target: ours ? '≥ 90 %' : null,
        met: ours ? share >= 0.9 : null,
        // What matters for the bill too: uncached tokens, and cached reads at a tenth (Anthropic's price; OpenAI's is ¼–½).
        note: `${run.input.toLocaleString('en-US')} input tokens, ${(run.input - run.cached).toLocaleString('en-US')} uncached; billed as ${Math.round(run.input - 0.9 * run.cached).toLocaleString('en-US')} with cached reads at 10 %`,
      });
      if (run.afterCompaction.length)
        rows.push({
          metric: `Uncached share of the request after a compaction, ${caching} caching`,
          case: `${name}: ${run.afterCompaction.length} compactions`,
          median: median(run.afterCompaction) * 100,
          p99: Math.max(...run.afterCompaction) * 100,
          unit: '%',
          target: ours ? '≤ 10 % each' : null,
          met: ours ? Math.max(...run.afterCompaction) <= 0.1 : null,
          note: '(p99 column: the worst compaction)',
        });
    }
  }
  return rows;
}
