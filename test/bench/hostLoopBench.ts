/**
 * What a host's own loop pays for workmem per model call, beside what a Session pays per
 * request, at 100 and 10k messages in the log, alternated with a Session's in one run: the HostLoop core
 * (the host holds the whole conversation and hands it over each call), the AI SDK
 * middleware's whole cost (generateText with it, less generateText without it, on a mock
 * model that answers at once), and the LangChain middleware's (createAgent's invoke with
 * it, less without it, on LangChain's fake model). The LangChain agents have a tool of their
 * own, as agents do: an agent with tools pays LangGraph a cost that grows with its messages
 * (about as much as the middleware's own at 10k), which the middleware's tools would
 * otherwise be charged with. Each call starts from an empty young generation.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { generateText, wrapLanguageModel, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createAgent, tool } from 'langchain';
import { z } from 'zod';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { requestMessagesOf } from '../../src/langchain/langchainMessages.js';
import { createWorkmem as createLangChainWorkmem } from '../../src/langchain/workmemMiddleware.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { HostLoop } from '../../src/session/hostLoop.js';
import { createSession, openSession } from '../../src/session/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { LONG_HISTORY_ARCHIVE, longHistoryEntries, zeroLatencyModel, type Scale } from './benchmarks.js';
import { emptyYoungGeneration, median, now, p99, type Row } from './harness.js';

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

const mock = (): MockLanguageModelV3 =>
  new MockLanguageModelV3({
    modelId: 'gpt-4o',
    doGenerate: async () => ({
      content: [{ type: 'text', text: ANSWER }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      },
      warnings: [],
    }),
  });

/** The options of a host loop driving one of the sessions. */
const driving = (sessionId: string, home: string) => ({
  sessionId,
  contextWindow: 128_000,
  home,
  env: {},
  trace: false,
  settings: { injectHistory: true },
});

export async function hostLoopOverhead(scale: Scale): Promise<Row[]> {
  const rows: Row[] = [];
  const sizes = [scale.sizes[0]!, scale.sizes.includes(10_000) ? 10_000 : scale.sizes.at(-1)!];
  for (const size of sizes) {
    const home = mkdtempSync(join(tmpdir(), 'workmem-bench-host-'));
    const own = await longSession(home, size);
    const hosted = await longSession(home, size);
    const wrapped = await longSession(home, size);
    const session = await openSession(own.id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
    const loop = await HostLoop.open({ ...driving(hosted.id, home), model: 'zero-latency' });
    const model = mock();
    const workmem = await createWorkmem({ ...driving(wrapped.id, home), model });
    const withMiddleware = wrapLanguageModel({ model, middleware: workmem.middleware });
    const plain = mock();
    const held = hosted.conversation;
    const aiMessages = wrapped.conversation as ModelMessage[];
    const bare = [...aiMessages];
    const agents = await langchainAgents(home, await longSession(home, size), scale.warmup + scale.samples);
    const prompted = (question: string) => timed(() => session.prompt(question));
    const generated = (messages: ModelMessage[], model: LanguageModelV3) => async (question: string) => {
      messages.push({ role: 'user', content: question });
      const ms = await timed(() => generateText({ model, messages }));
      messages.push({ role: 'assistant', content: ANSWER });
      return ms;
    };
    // Two phases, each beside a Session of its own: the AI SDK's 10k-message calls leave garbage
    // enough to weigh on whatever runs next, and LangChain's would weigh on the AI SDK's.
    const first = await alternate(scale, {
      session: prompted,
      core: async (question) => {
        held.push({ role: 'user', content: question });
        const ms = await timed(async () => {
          const call = await loop.prepare({ messages: held, tools: [] });
          await call.answer({ message: { role: 'assistant', content: ANSWER }, usage: null, finishReason: 'stop' });
        });
        held.push({ role: 'assistant', content: ANSWER });
        return ms;
      },
      middleware: generated(aiMessages, withMiddleware),
      plain: generated(bare, plain),
    });
    const second = await alternate(scale, { session: prompted, langchain: agents.withMiddleware, langchainPlain: agents.plain });
    await session.close();
    await loop.close();
    await workmem.close();
    await agents.close();
    rmSync(home, { recursive: true, force: true });
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
        note: `(${ratio.toFixed(2)} × Session's; generateText alone ${median(first.plain!).toFixed(2)} ms)`,
      },
      {
        metric: 'Per model call, LangChain middleware added',
        case: `${label} messages (createAgent's invoke with it less without it, a tool of its own in both)`,
        median: median(langchainAdded),
        p99: p99(langchainAdded),
        unit: 'ms',
        target: size === 10_000 ? 'median ≤ 1.5 × Session' : null,
        met: size === 10_000 ? langchainRatio <= 1.5 : null,
        note: `(${langchainRatio.toFixed(2)} × Session's ${median(second.session!).toFixed(2)} ms in the same phase; invoke alone ${median(second.langchainPlain!).toFixed(2)} ms)`,
      },
    );
  }
  return rows;
}

/** How long `run` takes, in ms, from an empty young generation (a 10k-message call's garbage is not the next call's to pay). */
async function timed(run: () => Promise<unknown>): Promise<number> {
  emptyYoungGeneration();
  const t = now();
  await run();
  return now() - t;
}

/** Each step once a round, in turn, the same question for all; the times after the warm-up, by step. */
async function alternate(scale: Scale, steps: Record<string, (question: string) => Promise<number>>): Promise<Record<string, number[]>> {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
  for (let i = 0; i < scale.warmup + scale.samples; i++) {
    const question = `Question ${i}: what changed since the last request?`;
    for (const [name, step] of Object.entries(steps)) {
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
    for (let i = 0; i < rounds; i++) model.respond(new AIMessage(ANSWER));
    return model;
  };
  const model = answering();
  const workmem = await createLangChainWorkmem({ ...driving(wrapped.id, home), model });
  const lookup = tool(async ({ query }: { query: string }) => `Nothing on ${query}.`, {
    name: 'lookup',
    description: 'Look a question up in the knowledge base',
    schema: z.object({ query: z.string() }),
  });
  const agent = (withWorkmem: boolean) =>
    createAgent({ model: withWorkmem ? model : answering(), tools: [lookup], middleware: withWorkmem ? [workmem.middleware] : [] });
  const calls = (run: ReturnType<typeof agent>) => {
    let messages: BaseMessage[] = requestMessagesOf(wrapped.conversation).messages;
    return (question: string): Promise<number> =>
      timed(async () => void (messages = (await run.invoke({ messages: [...messages, new HumanMessage(question)] })).messages));
  };
  return { withMiddleware: calls(agent(true)), plain: calls(agent(false)), close: () => workmem.close() };
}
