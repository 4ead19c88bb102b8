/**
 * What a model's stream brings in, bounded (issue 24): finish-only chunks that never ended a
 * turn, a 10 MB tool-call id, a 10 MB error message, a server silent while it reads a long
 * prompt, and through the AI SDK adapter, parts that add nothing and tool names of 1 MB.
 * Each case survives when the turn ends as its row says, what it wrote stays small, the
 * session stays consistent and the next turn works.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { aiSdkModel } from '../../src/aiSdk/index.js';
import { openaiChat, type OpenAIChatOptions } from '../../src/llm/openaiChat.js';
import { createSession, type Session, type SessionOptions, type TurnResult } from '../../src/session/index.js';
import { startTestServer, type Fault, type Policy, type TestServer } from '../../src/testing/index.js';
import type { WorkmemEvent } from '../../src/events.js';
import { historyProblems, logEntriesOf } from './checks.js';
import type { Tally } from './report.js';
import { HANG_MS } from '../hangGuard.js';

const KB = 1024;
const MB = 1024 * KB;

export async function boundCases(tally: Tally, home: string): Promise<void> {
  await finishFloodCase(tally, home);
  await toolCallIdCases(tally, home);
  await errorTextCase(tally, home);
  await firstOutputCases(tally, home);
  await aiSdkCases(tally, home);
}

interface Run {
  session: Session;
  events: WorkmemEvent[];
  result: TurnResult;
  ms: number;
  problems: string[];
}

/** A first turn, then `prompt` with the server's next request faulty (if any), then the checks of afterwards. */
async function run(options: Omit<SessionOptions, 'home'>, home: string, prompt: string, arm?: () => void): Promise<Run> {
  const session = await createSession({ home, cwd: `/llm/bounds/${prompt.replace(/\W+/g, '-')}`, env: {}, trace: false, ...options });
  await session.prompt('a first question');
  const before = logEntriesOf(session.dir).map((e) => JSON.stringify(e));
  const events: WorkmemEvent[] = [];
  session.on('*', (e) => events.push(e));
  arm?.();
  const started = performance.now();
  const result = await Promise.race([
    session.prompt(prompt),
    // A hang guard, not a speed check: a loaded machine takes many times as long (test/hangGuard.ts).
    sleep(HANG_MS).then(
      (): TurnResult =>
        ({
          status: 'failed',
          error: { kind: 'internal', message: `did not end in ${HANG_MS / 60_000} min`, retryable: false },
        }) as TurnResult,
    ),
  ]);
  const ms = performance.now() - started;
  const problems = historyProblems(session.history);
  const now = logEntriesOf(session.dir).map((e) => JSON.stringify(e));
  if (before.some((line, i) => now[i] !== line)) problems.push('an acknowledged log line changed or went missing');
  const next = await session.prompt('a normal question');
  if (next.status !== 'done') problems.push(`the next turn ended ${next.status}: ${next.error?.message}`);
  await session.close();
  return { session, events, result, ms, problems };
}

function expectEnd(result: TurnResult, status: 'done' | 'failed', kind?: string): string[] {
  if (result.status !== status) return [`the turn ended ${result.status}: ${result.error?.message.slice(0, 200)}`];
  if (kind && result.error?.kind !== kind)
    return [`failed with ${result.error?.kind}, not ${kind}: ${result.error?.message.slice(0, 200)}`];
  return [];
}

function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}

async function withServer(policy: Policy, run: (server: TestServer) => Promise<void>, strict = false): Promise<void> {
  const server = await startTestServer({ policy, strict });
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

const clientFor = (server: TestServer, extra: Partial<OpenAIChatOptions> = {}) =>
  openaiChat({ baseURL: server.baseURL, model: 'gpt-4o', contextWindow: 32_000, maxOutputTokens: 200, timeoutMs: 400, env: {}, ...extra });
const answer: Policy = () => ({ content: 'A normal answer.' });
const NO_RETRY = { retry: { maxRetries: 0 } };

/** Finish-only chunks every 50 ms after the answer: they held off the stall timeout for ever. */
async function finishFloodCase(tally: Tally, home: string): Promise<void> {
  await withServer(answer, async (server) => {
    const fault: Fault = { type: 'finish_flood', everyMs: 50 };
    const r = await run({ llm: clientFor(server), settings: NO_RETRY }, home, 'finish flood', () => server.inject(fault));
    const problems = [...expectEnd(r.result, 'done'), ...r.problems];
    if (r.ms > 2_000) problems.push(`took ${r.ms.toFixed(0)} ms`);
    tally.add(
      'finish-only chunks after the answer, every 50 ms',
      { survived: !problems.length, detail: problems.join('; ') },
      'ends at its finish, the answer kept',
    );
  });
}

/** A 10 MB id is cut with the response; a 300-character one is stored and sent as a short id that pairs. */
async function toolCallIdCases(tally: Tally, home: string): Promise<void> {
  const ids: Record<string, string> = { huge: 'h'.repeat(10 * MB), long: `call_${'l'.repeat(300)}` };
  const policy: Policy = (body) => {
    const last = body.messages.at(-1)!;
    const id = last.role === 'user' ? ids[String(last.content).split(' ')[0]!] : undefined;
    return id ? { toolCalls: [{ id, name: 'read', arguments: '{"path":"overview.md"}' }] } : { content: 'A normal answer.' };
  };
  for (const [name, prompt, status, kind] of [
    ['a 10 MB tool-call id', 'huge id', 'failed', 'bad_response'],
    ['a 300-character tool-call id', 'long id', 'done', undefined],
  ] as const) {
    await withServer(
      policy,
      async (server) => {
        const r = await run({ llm: clientFor(server), settings: NO_RETRY }, home, prompt);
        const problems = [...expectEnd(r.result, status, kind), ...r.problems];
        const log = statSync(join(r.session.dir, 'messages.jsonl')).size;
        const body = Math.max(...server.requests.map((q) => JSON.stringify(q.body).length));
        const stored = logEntriesOf(r.session.dir).flatMap((e) =>
          e.type === 'message' && e.message.role === 'assistant' ? (e.message.tool_calls ?? []).map((c) => c.id) : [],
        );
        if (log > 64 * KB) problems.push(`messages.jsonl is ${log} bytes`);
        if (body > 64 * KB) problems.push(`a request body of ${body} characters`);
        if (stored.some((id) => id.length > 64)) problems.push(`an id of ${Math.max(...stored.map((id) => id.length))} characters stored`);
        tally.add(
          name,
          { survived: !problems.length, detail: problems.join('; ') },
          status === 'done' ? 'a short stable id, its result paired' : 'cut as output, nothing of it stored or sent',
        );
      },
      true,
    );
  }
}

/** A 10 MB message in a 500: the error every event and the result carry is a few KB. */
async function errorTextCase(tally: Tally, home: string): Promise<void> {
  await withServer(answer, async (server) => {
    const fault: Fault = { type: 'server_error', message: `The server broke: ${'trace '.repeat(1_800_000)}` };
    const r = await run({ llm: clientFor(server), settings: NO_RETRY }, home, 'huge error', () => server.inject(fault));
    const problems = [...expectEnd(r.result, 'failed', 'server'), ...r.problems];
    const largest = Math.max(...r.events.map((e) => JSON.stringify(e).length));
    if ((r.result.error?.message.length ?? 0) > 5_000) problems.push(`an error of ${r.result.error!.message.length} characters`);
    if (largest > 10_000) problems.push(`an event of ${largest} characters`);
    tally.add(
      'a 10 MB error message from the server',
      { survived: !problems.length, detail: problems.join('; ') },
      'a short error, short events',
    );
  });
}

/** A server silent while it reads the prompt: waited for in proportion; past that, not retried. */
async function firstOutputCases(tally: Tally, home: string): Promise<void> {
  const cases = [
    ['a server silent for 600 ms while it reads the prompt', 2, 'done', 'waited for: 150 ms + 2 ms a prompt token'],
    ['a prompt the server cannot read in time', 0.5, 'failed', 'a timeout that says why, not retried'],
  ] as const;
  for (const [name, msPerPromptToken, status, note] of cases) {
    await withServer(answer, async (server) => {
      const llm = clientFor(server, { timeoutMs: 150, firstByteTimeoutMs: 150, firstByteMsPerPromptToken: msPerPromptToken });
      const latency: Fault = { type: 'latency', ms: status === 'done' ? 600 : 3_000 };
      const settings = { retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1 } };
      const r = await run({ llm, settings }, home, 'slow reader', () => server.inject(latency));
      const problems = [...expectEnd(r.result, status, status === 'failed' ? 'timeout' : undefined), ...r.problems];
      const retries = r.events.filter((e) => e.type === 'retry').length;
      if (retries) problems.push(`retried ${retries} times`);
      if (status === 'failed' && !/not retried/.test(r.result.error?.message ?? '')) problems.push(`unclear: ${r.result.error?.message}`);
      tally.add(name, { survived: !problems.length, detail: problems.join('; ') }, note);
    });
  }
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const normal: LanguageModelV3StreamPart[] = [
  { type: 'text-delta', id: 't', delta: 'A normal answer.' },
  { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
];

/** A mock AI SDK model: `faulty` parts for the prompt `prompt`, a normal answer to anything else. */
function modelFor(prompt: string, faulty: () => ReadableStream<LanguageModelV3StreamPart>): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    modelId: 'workmem-test',
    doStream: async (options) => {
      const last = options.prompt.at(-1);
      const text = last?.role === 'user' ? last.content.map((p) => (p.type === 'text' ? p.text : '')).join('') : '';
      if (text.startsWith(prompt)) return { stream: faulty() };
      return { stream: new ReadableStream({ start: (c) => (normal.forEach((p) => c.enqueue(p)), c.close()) }) };
    },
  });
}

/** Parts `part(i)` every millisecond, until cancelled. */
const endless = (part: (i: number) => LanguageModelV3StreamPart) => () => {
  let i = 0;
  return new ReadableStream<LanguageModelV3StreamPart>({
    pull: async (c) => {
      await sleep(1);
      c.enqueue(part(i++));
    },
  });
};

async function aiSdkCases(tally: Tally, home: string): Promise<void> {
  const floods: [string, (i: number) => LanguageModelV3StreamPart][] = [
    ['tool-input-start', () => ({ type: 'tool-input-start', id: 'c1', toolName: 'read' })],
    [
      'provider-executed tool-call',
      (i) => ({ type: 'tool-call', toolCallId: `s${i}`, toolName: 'web_search', input: '{}', providerExecuted: true }),
    ],
  ];
  for (const [kind, part] of floods) {
    const llm = aiSdkModel(modelFor('flood', endless(part)), { timeoutMs: 300, firstByteTimeoutMs: 300, firstByteMsPerPromptToken: 0 });
    const r = await run({ llm, settings: NO_RETRY }, home, 'flood of parts');
    const problems = [...expectEnd(r.result, 'failed', 'timeout'), ...r.problems];
    tally.add(
      'AI SDK: endless parts that add nothing',
      { survived: !problems.length, detail: `${kind}: ${problems.join('; ')}` },
      'not progress: the stall timeout ends them',
    );
  }
  const name = 'n'.repeat(MB);
  const calls: LanguageModelV3StreamPart[] = [
    ...Array.from({ length: 20 }, (_, i): LanguageModelV3StreamPart => ({
      type: 'tool-call',
      toolCallId: `c${i}`,
      toolName: name,
      input: '{}',
    })),
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
  ];
  const names = modelFor('names', () => new ReadableStream({ start: (c) => (calls.forEach((p) => c.enqueue(p)), c.close()) }));
  const r = await run({ llm: aiSdkModel(names, { contextWindow: 32_000 }), settings: NO_RETRY }, home, 'names of 1 MB');
  const problems = [...expectEnd(r.result, 'failed', 'bad_response'), ...r.problems];
  const written = bytesUnder(join(r.session.dir, 'working-memory'));
  if (written > 64 * KB) problems.push(`${written} bytes in working-memory/`);
  tally.add(
    'AI SDK: 20 tool calls with 1 MB names',
    { survived: !problems.length, detail: problems.join('; ') },
    'cut as output, nothing saved',
  );
  const huge = `overloaded: ${'detail '.repeat(1_500_000)}`;
  const errors = modelFor(
    'error',
    () =>
      new ReadableStream({ start: (c) => (c.enqueue({ type: 'error', error: { type: 'overloaded_error', message: huge } }), c.close()) }),
  );
  const e = await run({ llm: aiSdkModel(errors), settings: NO_RETRY }, home, 'error part of 10 MB');
  const errorProblems = [...expectEnd(e.result, 'failed', 'server'), ...e.problems];
  const largest = Math.max(...e.events.map((ev) => JSON.stringify(ev).length));
  if (largest > 10_000) errorProblems.push(`an event of ${largest} characters`);
  tally.add(
    'AI SDK: a 10 MB error part',
    { survived: !errorProblems.length, detail: errorProblems.join('; ') },
    'a short error, short events',
  );
}
