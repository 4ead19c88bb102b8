/**
 * What a host's own loop pays for workmem per model call, beside what a Session pays per
 * request, at 100 and 10k messages in the log: the HostLoop core (the host holds the whole
 * conversation and hands it over each call), the AI SDK middleware's whole cost
 * (generateText with it, less generateText without it, on a mock model that answers at
 * once), and the LangChain middleware's (createAgent's invoke with it, less without it, on
 * LangChain's fake model). The LangChain agents have a tool of their own, as agents do: an
 * agent with tools pays LangGraph a cost that grows with its messages, which the
 * middleware's tools would otherwise be charged with.
 *
 * Each door runs in a process of its own (hostLoopChild.ts) beside a Session of its own,
 * one call of each a round, in turn and in reverse turn every other round. Every call starts
 * from an empty young generation and cold caches: a model call follows a wait for the
 * network, and calls alternated warm measure what the call before them left in the caches
 * (the same code measured 0.9 × or 1.8 × Session's by the order of the calls alone).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Middleware } from '@ai-sdk/provider';
import { generateText, wrapLanguageModel, type ModelMessage } from 'ai';
import { createAgent, tool, type AgentMiddleware } from 'langchain';
import { z } from 'zod';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { requestMessagesOf } from '../../src/langchain/langchainMessages.js';
import { createWorkmem as createLangChainWorkmem } from '../../src/langchain/workmemMiddleware.js';
import type { ChatMessage } from '../../src/history/messages.js';
import type { LLM } from '../../src/llm/llm.js';
import { HostLoop } from '../../src/session/hostLoop.js';
import { createSession, openSession } from '../../src/session/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { built, LONG_HISTORY_ARCHIVE, longHistoryEntries, zeroLatencyModel, type Scale } from './benchmarks.js';
import { coldCaches, coldCachesMs, emptyYoungGeneration, median, now, p99, type Row } from './harness.js';

const ANSWER = 'Noted, thank you.';

/** A session whose log holds `messages` messages (older ones behind a compaction), and the conversation a host would hold. */
export async function longSession(home: string, messages: number): Promise<{ id: string; conversation: ChatMessage[] }> {
  const counter = await loadTokenCounter('gpt-4o');
  const session = await createSession({ llm: zeroLatencyModel(), home, cwd: '/bench', env: {}, trace: false });
  const { id, dir } = session;
  await session.close();
  const lines = longHistoryEntries(messages, 0, counter);
  if (lines.length > messages) writeFileSync(join(dir, 'working-memory', LONG_HISTORY_ARCHIVE), '# Archived conversation\n');
  appendFileSync(join(dir, 'messages.jsonl'), `${lines.join('\n')}\n`);
  const conversation = lines.slice(0, messages).map((l) => (JSON.parse(l) as { message: ChatMessage }).message);
  return { id, conversation };
}

/**
 * A model that answers after a wait (coldCaches) and keeps nothing (the AI SDK's
 * MockLanguageModelV3 keeps every call's prompt: at 10k messages, megabytes a call, whose
 * collection would be timed too).
 */
const mock = (): LanguageModelV3 => ({
  specificationVersion: 'v3',
  provider: 'bench',
  modelId: 'gpt-4o',
  supportedUrls: {},
  doGenerate: async () =>
    answered(() => ({
      content: [{ type: 'text', text: ANSWER }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      },
      warnings: [],
    })),
  doStream: () => Promise.reject(new Error('the bench generates, it does not stream')),
});

/** A Session's model: the bench's, after the same wait. */
function waitingModel(): LLM {
  const model = zeroLatencyModel();
  return { ...model, complete: (request, options) => answered(() => model.complete(request, options)) };
}

/** The options of a host loop driving one of the sessions. */
const driving = (sessionId: string, home: string) => ({
  sessionId,
  contextWindow: 128_000,
  home,
  env: {},
  trace: false,
  settings: { injectHistory: true },
});

/** The framework whose middleware a phase measures. */
export type Door = 'ai-sdk' | 'langchain';

/** The times of each step of a door's phase (after the warm-up), in ms. */
export type PhaseTimes = Record<string, number[]>;

export async function hostLoopOverhead(scale: Scale): Promise<Row[]> {
  const rows: Row[] = [];
  const sizes = [scale.sizes[0]!, scale.sizes.includes(10_000) ? 10_000 : scale.sizes.at(-1)!];
  for (const size of sizes) {
    // The smaller size has no target: a fifth of the rounds, one process a door. At the
    // larger, each door runs in three processes, taken in turn with the other door's, their
    // samples pooled: what one process's heap and code happen to be, or a slower minute of
    // the machine, weighs on a third of them. The AI SDK's calls take twice LangChain's
    // (generateText validates every message) and its ratio varies less; LangChain's is the
    // difference of two 12-16 ms invokes: more rounds.
    const largest = size === sizes.at(-1);
    const processes = largest && size >= 10_000 ? 3 : 1;
    const part = (share: number): Scale => ({
      ...scale,
      warmup: Math.ceil(scale.warmup * (largest ? 1 / processes : share)),
      samples: Math.ceil((scale.samples * share) / processes),
    });
    const runs: { first: PhaseTimes[]; second: PhaseTimes[] } = { first: [], second: [] };
    for (let p = 0; p < processes; p++) {
      runs.first.push(phaseInChild('ai-sdk', size, part(largest ? 0.5 : 0.2)));
      runs.second.push(phaseInChild('langchain', size, part(largest ? 0.85 : 0.2)));
    }
    const first = pooled(runs.first);
    const second = pooled(runs.second);
    const label = size >= 1000 ? `${size / 1000}k` : String(size);
    const added = first.middleware!.map((m, i) => m - first.plain![i]!);
    const ratio = median(added) / median(first.session!);
    const langchainAdded = second.langchain!.map((m, i) => m - second.langchainPlain![i]!);
    const langchainRatio = median(langchainAdded) / median(second.session!);
    rows.push(
      {
        metric: 'Per model call, Session (own loop)',
        case: `${label} messages in the log`,
        median: median(first.session!),
        p99: p99(first.session!),
        unit: 'ms',
        target: null,
        met: null,
      },
      {
        metric: 'Per model call, HostLoop core',
        case: `${label} messages, the host's whole conversation handed over`,
        median: median(first.core!),
        p99: p99(first.core!),
        unit: 'ms',
        target: null,
        met: null,
      },
      {
        metric: 'Per model call, AI SDK middleware added',
        case: `${label} messages (generateText with it less without it)`,
        median: median(added),
        p99: p99(added),
        unit: 'ms',
        target: size === 10_000 ? 'median ≤ 1.5 × Session' : null,
        met: size === 10_000 ? ratio <= 1.5 : null,
        note: `(${ratio.toFixed(2)} × Session's; its own work inside the call ${ownNote(first.middlewareOwn!, first.session!)}; generateText alone ${median(first.plain!).toFixed(2)} ms)`,
      },
      {
        metric: 'Per model call, LangChain middleware added',
        case: `${label} messages (createAgent's invoke with it less without it, a tool of its own in both)`,
        median: median(langchainAdded),
        p99: p99(langchainAdded),
        unit: 'ms',
        target: size === 10_000 ? 'median ≤ 1.5 × Session' : null,
        met: size === 10_000 ? langchainRatio <= 1.5 : null,
        note: `(${langchainRatio.toFixed(2)} × Session's ${median(second.session!).toFixed(2)} ms in the same phase; its own work inside the call ${ownNote(second.langchainOwn!, second.session!)}; invoke alone ${median(second.langchainPlain!).toFixed(2)} ms)`,
      },
    );
  }
  return rows;
}

const ownNote = (own: number[], session: number[]): string =>
  `${median(own).toFixed(2)} ms, ${(median(own) / median(session)).toFixed(2)} ×`;

/**
 * The AI SDK middleware, its time in each call recorded less the model's: what it does itself,
 * the rest of what it adds being the host's own work run after it (caches and collections).
 */
function ownTimeOfAiSdk(middleware: LanguageModelV3Middleware, times: number[]): LanguageModelV3Middleware {
  return {
    ...middleware,
    wrapGenerate: async (options) => {
      let inner = 0;
      const model: LanguageModelV3 = Object.assign(Object.create(options.model) as LanguageModelV3, {
        doGenerate: async (params: LanguageModelV3CallOptions) => {
          const start = now();
          try {
            return await options.model.doGenerate(params);
          } finally {
            inner += now() - start;
          }
        },
      });
      const start = now();
      const result = await middleware.wrapGenerate!({ ...options, model });
      times.push(now() - start - inner);
      return result;
    },
  };
}

/** The LangChain middleware, its time in each call recorded less the model's. */
function ownTimeOfLangChain(middleware: AgentMiddleware, times: number[]): AgentMiddleware {
  return {
    ...middleware,
    wrapModelCall: async (request, handler) => {
      let inner = 0;
      const start = now();
      const answer = await middleware.wrapModelCall!(request, async (sent) => {
        const at = now();
        try {
          return await handler(sent);
        } finally {
          inner += now() - at;
        }
      });
      times.push(now() - start - inner);
      return answer;
    },
  };
}

/** Phases' samples together, step by step (each difference stays within its round). */
function pooled(phases: PhaseTimes[]): PhaseTimes {
  const out: PhaseTimes = {};
  for (const phase of phases) for (const [step, times] of Object.entries(phase)) (out[step] ??= []).push(...times);
  return out;
}

/** A door's phase run in a new process: its heap holds that door's conversations alone. */
function phaseInChild(door: Door, size: number, scale: Scale): PhaseTimes {
  const args = JSON.stringify({ door, size, warmup: scale.warmup, samples: scale.samples });
  const run = spawnSync(process.execPath, ['--expose-gc', built('test/bench/hostLoopChild.js'), args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`the ${door} host-loop child failed:\n${run.stderr}`);
  return JSON.parse(run.stdout) as PhaseTimes;
}

/**
 * One door's phase at one size, in this process: the AI SDK's (a Session, the HostLoop core,
 * generateText with the middleware and without it) or LangChain's (a Session, createAgent's
 * invoke with the middleware and without it).
 */
export async function hostLoopPhase(door: Door, size: number, scale: Pick<Scale, 'warmup' | 'samples'>): Promise<PhaseTimes> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-bench-host-'));
  try {
    const own = await longSession(home, size);
    const session = await openSession(own.id, { llm: waitingModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
    const prompted = (question: string) => timed(() => session.prompt(question));
    try {
      return door === 'ai-sdk' ? await aiSdkPhase(home, size, scale, prompted) : await langchainPhase(home, size, scale, prompted);
    } finally {
      await session.close();
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

type Step = (question: string) => Promise<number>;

async function aiSdkPhase(home: string, size: number, scale: Pick<Scale, 'warmup' | 'samples'>, session: Step): Promise<PhaseTimes> {
  const hosted = await longSession(home, size);
  const wrapped = await longSession(home, size);
  const loop = await HostLoop.open({ ...driving(hosted.id, home), model: 'zero-latency' });
  const model = mock();
  const workmem = await createWorkmem({ ...driving(wrapped.id, home), model });
  const own: number[] = [];
  const withMiddleware = wrapLanguageModel({ model, middleware: ownTimeOfAiSdk(workmem.middleware, own) });
  const plain = mock();
  const held = hosted.conversation;
  const aiMessages = wrapped.conversation as ModelMessage[];
  const bare = [...aiMessages];
  const generated = (messages: ModelMessage[], model: LanguageModelV3) => async (question: string) => {
    messages.push({ role: 'user', content: question });
    const ms = await timed(() => generateText({ model, messages }));
    messages.push({ role: 'assistant', content: ANSWER });
    return ms;
  };
  try {
    const times = await alternate(scale, {
      session,
      core: async (question) => {
        held.push({ role: 'user', content: question });
        const ms = await timed(async () => {
          const call = await loop.prepare({ messages: held, tools: [] });
          await call.answer(answered(() => ({ message: { role: 'assistant', content: ANSWER }, usage: null, finishReason: 'stop' })));
        });
        held.push({ role: 'assistant', content: ANSWER });
        return ms;
      },
      middleware: generated(aiMessages, withMiddleware),
      plain: generated(bare, plain),
    });
    return { ...times, middlewareOwn: own.slice(scale.warmup) };
  } finally {
    await loop.close();
    await workmem.close();
  }
}

async function langchainPhase(home: string, size: number, scale: Pick<Scale, 'warmup' | 'samples'>, session: Step): Promise<PhaseTimes> {
  const agents = await langchainAgents(home, await longSession(home, size), scale.warmup + scale.samples);
  try {
    const times = await alternate(scale, { session, langchain: agents.withMiddleware, langchainPlain: agents.plain });
    return { ...times, langchainOwn: agents.own.slice(scale.warmup) };
  } finally {
    await agents.close();
  }
}

/**
 * How long `run` takes, in ms, from an empty young generation (a 10k-message call's garbage
 * is not the next call's to pay) and cold caches, less the time the model's wait took to make
 * them cold again.
 */
async function timed(run: () => Promise<unknown>): Promise<number> {
  emptyYoungGeneration();
  coldCaches();
  const waited = coldCachesMs();
  const t = now();
  await run();
  return now() - t - (coldCachesMs() - waited);
}

/** A model's answer, after a wait for the network (coldCaches). */
function answered<T>(answer: () => T): T {
  coldCaches();
  return answer();
}

/** Each step once a round, the same question for all, in turn and in reverse turn every other round; the times after the warm-up, by step. */
async function alternate(scale: Pick<Scale, 'warmup' | 'samples'>, steps: Record<string, Step>): Promise<PhaseTimes> {
  const times: PhaseTimes = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
  const forward = Object.entries(steps);
  const backward = [...forward].reverse();
  for (let i = 0; i < scale.warmup + scale.samples; i++) {
    const question = `Question ${i}: what changed since the last request?`;
    for (const [name, step] of i % 2 ? backward : forward) {
      const ms = await step(question);
      if (i >= scale.warmup) times[name]!.push(ms);
    }
  }
  return times;
}

/**
 * Two LangChain agents on fake models that answer at once, each with the same tool of its own
 * and holding the conversation of the session: one with workmem's middleware driving that
 * session, one without. Each call hands the agent its whole conversation and a question; the
 * time of the call is returned.
 */
async function langchainAgents(home: string, wrapped: { id: string; conversation: ChatMessage[] }, rounds: number) {
  const answering = () => {
    const model = fakeModel();
    for (let i = 0; i < rounds; i++) model.respond(() => answered(() => new AIMessage(ANSWER)));
    return model;
  };
  const model = answering();
  const workmem = await createLangChainWorkmem({ ...driving(wrapped.id, home), model });
  const lookup = tool(async ({ query }: { query: string }) => `Nothing on ${query}.`, {
    name: 'lookup',
    description: 'Look a question up in the knowledge base',
    schema: z.object({ query: z.string() }),
  });
  const calls = (model: ReturnType<typeof answering>, middleware: AgentMiddleware[]) => {
    const run = createAgent({ model, tools: [lookup], middleware });
    let messages: BaseMessage[] = requestMessagesOf(wrapped.conversation).messages;
    return async (question: string): Promise<number> => {
      const ms = await timed(
        async () => void (messages = (await run.invoke({ messages: [...messages, new HumanMessage(question)] })).messages),
      );
      // The fake model keeps what each call sent: nothing the bench wants kept, or timed when collected.
      model.calls.length = 0;
      return ms;
    };
  };
  const own: number[] = [];
  return {
    withMiddleware: calls(model, [ownTimeOfLangChain(workmem.middleware, own)]),
    plain: calls(answering(), []),
    own,
    close: () => workmem.close(),
  };
}
