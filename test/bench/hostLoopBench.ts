/**
 * What a host's own loop pays for workmem per model call, beside what a Session pays per
 * request, at 100 and 10k messages in the log, alternated in one run: the HostLoop core
 * (the host holds the whole conversation and hands it over each call), and the AI SDK
 * middleware's whole cost (generateText with it, less generateText without it, on a mock
 * model that answers at once).
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, wrapLanguageModel, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { HostLoop } from '../../src/session/hostLoop.js';
import { createSession, openSession } from '../../src/session/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { LONG_HISTORY_ARCHIVE, longHistoryEntries, zeroLatencyModel, type Scale } from './benchmarks.js';
import { median, now, p99, type Row } from './harness.js';

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

export async function hostLoopOverhead(scale: Scale): Promise<Row[]> {
  const rows: Row[] = [];
  const sizes = [scale.sizes[0]!, scale.sizes.includes(10_000) ? 10_000 : scale.sizes.at(-1)!];
  for (const size of sizes) {
    const home = mkdtempSync(join(tmpdir(), 'workmem-bench-host-'));
    const own = await longSession(home, size);
    const hosted = await longSession(home, size);
    const wrapped = await longSession(home, size);
    const session = await openSession(own.id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
    const loop = await HostLoop.open({
      sessionId: hosted.id,
      model: 'zero-latency',
      contextWindow: 128_000,
      home,
      env: {},
      trace: false,
      settings: { injectHistory: true },
    });
    const model = mock();
    const workmem = await createWorkmem({
      model,
      sessionId: wrapped.id,
      contextWindow: 128_000,
      home,
      env: {},
      trace: false,
      settings: { injectHistory: true },
    });
    const withMiddleware = wrapLanguageModel({ model, middleware: workmem.middleware });
    const plain = mock();
    const held = hosted.conversation;
    const aiMessages = wrapped.conversation as ModelMessage[];
    const bare = [...aiMessages];
    const times = { session: [] as number[], core: [] as number[], middleware: [] as number[], plain: [] as number[] };
    const rounds = scale.warmup + scale.samples;
    for (let i = 0; i < rounds; i++) {
      const question = `Question ${i}: what changed since the last request?`;
      let t = now();
      await session.prompt(question);
      const sessionMs = now() - t;

      held.push({ role: 'user', content: question });
      t = now();
      const call = await loop.prepare({ messages: held, tools: [] });
      await call.answer({ message: { role: 'assistant', content: ANSWER }, usage: null, finishReason: 'stop' });
      const coreMs = now() - t;
      held.push({ role: 'assistant', content: ANSWER });

      aiMessages.push({ role: 'user', content: question });
      t = now();
      await generateText({ model: withMiddleware, messages: aiMessages });
      const middlewareMs = now() - t;
      aiMessages.push({ role: 'assistant', content: ANSWER });

      bare.push({ role: 'user', content: question });
      t = now();
      await generateText({ model: plain, messages: bare });
      const plainMs = now() - t;
      bare.push({ role: 'assistant', content: ANSWER });
      if (i < scale.warmup) continue;
      times.session.push(sessionMs);
      times.core.push(coreMs);
      times.middleware.push(middlewareMs);
      times.plain.push(plainMs);
    }
    await session.close();
    await loop.close();
    await workmem.close();
    rmSync(home, { recursive: true, force: true });
    const label = size >= 1000 ? `${size / 1000}k` : String(size);
    const added = times.middleware.map((m, i) => m - times.plain[i]!);
    const ratio = median(added) / median(times.session);
    rows.push(
      {
        metric: 'Per model call, Session (own loop)',
        case: `${label} messages in the log`,
        median: median(times.session),
        p99: p99(times.session),
        unit: 'ms',
        target: null,
        met: null,
      },
      {
        metric: 'Per model call, HostLoop core',
        case: `${label} messages, the host's whole conversation handed over`,
        median: median(times.core),
        p99: p99(times.core),
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
        note: `(${ratio.toFixed(2)} × Session's; generateText alone ${median(times.plain).toFixed(2)} ms)`,
      },
    );
  }
  return rows;
}
