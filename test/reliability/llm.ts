/**
 * The model's side of a turn, as a hostile or broken server plays it (issue 19 §2, §3):
 * runs of one character class that made token counting quadratic (200 KB: 41 s with the
 * event loop blocked), an endless answer and keep-alive chunks that never ended a turn,
 * a key streamed a few characters per delta, and a password in the base URL; and what a
 * stream brings in, bounded (issue 24, llmBounds.ts). Each case survives when the turn
 * ends (done, or failed with a clear error), the session stays consistent and usable, and
 * no secret shows. Counting times are figures, with a bound.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { countTokens } from 'gpt-tokenizer/model/gpt-4o';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { createSession, type Session, type TurnResult } from '../../src/session/index.js';
import { startTestServer, type Fault, type PolicyReply, type TestServer } from '../../src/testing/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import type { WorkmemEvent } from '../../src/events.js';
import { historyProblems, logEntriesOf } from './checks.js';
import { Tally, type FamilyResult } from './report.js';
import { boundCases } from './llmBounds.js';
import { HANG_MS } from '../hangGuard.js';

const KEY = 'sk-proj-streamedKEY0123456789abcdef';

export interface LlmCaseOptions {
  /** Also the 10 MB runs and the unbounded encoder's reference time (the full run). */
  full?: boolean;
}

export async function llmCases(options: LlmCaseOptions = {}): Promise<FamilyResult> {
  const tally = new Tally('model streams');
  const figures: string[] = [];
  await countingCases(tally, figures, options.full ?? false);
  const home = mkdtempSync(join(tmpdir(), 'workmem-llm-'));
  try {
    await longArgumentCase(tally, figures, home);
    await neverEndingCases(tally, home);
    await secretCases(tally, home);
    await boundCases(tally, home);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  return tally.result(figures);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

/** The counter alone on runs of one character class: each must finish within its bound. */
async function countingCases(tally: Tally, figures: string[], full: boolean): Promise<void> {
  const counter = await loadTokenCounter('gpt-4o');
  const letters = (n: number): string => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join('');
  const runs: [string, () => string, number][] = [
    ['200 KB of "a"', () => 'a'.repeat(200_000), 2_000],
    ['200 KB of mixed lowercase letters', () => letters(200_000), 10_000],
  ];
  if (full)
    runs.push(
      ['10 MB of "a"', () => 'a'.repeat(10_000_000), 20_000],
      ['10 MB of one Chinese character', () => '中'.repeat(10_000_000), 20_000],
      ['10 MB of spaces', () => ' '.repeat(10_000_000), 20_000],
    );
  const times: string[] = [];
  for (const [name, make, boundMs] of runs) {
    const text = make();
    const started = performance.now();
    let tokens = 0;
    let error = '';
    try {
      tokens = counter.text(text);
    } catch (e) {
      error = (e as Error).message;
    }
    const ms = performance.now() - started;
    times.push(`${name} ${seconds(ms)} (${tokens.toLocaleString('en-US')} tokens)`);
    tally.add(
      'a run of one character class counted',
      { survived: !error && tokens > 0 && ms < boundMs, detail: `${name}: ${error || `${seconds(ms)}, bound ${seconds(boundMs)}`}` },
      'bounded time',
    );
  }
  figures.push(`token counting, one character class: ${times.join('; ')}`);
  if (full) {
    // The unbounded encoder on a tenth of the size, for comparison (it is quadratic: ×100 at 200 KB).
    const started = performance.now();
    countTokens('a'.repeat(20_000), { disallowedSpecial: new Set() });
    figures.push(`the encoder alone on 20 KB of "a": ${seconds(performance.now() - started)} (before the bound, 200 KB took 41 s)`);
  }
}

async function withServer<T>(
  policy: () => PolicyReply,
  options: { chunkChars?: number },
  run: (server: TestServer) => Promise<T>,
): Promise<T> {
  const server = await startTestServer({ policy, ...options });
  try {
    return await run(server);
  } finally {
    await server.close();
  }
}

/** A clear failure: a sentence, no object dump or stack. */
function clearFailure(result: TurnResult, kind: string): string | null {
  if (result.status !== 'failed') return `the turn ended ${result.status}`;
  if (result.error?.kind !== kind) return `failed with ${result.error?.kind}, not ${kind}: ${result.error?.message}`;
  const message = result.error.message;
  if (message.length < 20 || /\[object Object\]|\bundefined\b|\n\s+at /.test(message)) return `unclear error: ${message}`;
  return null;
}

/** The messages acknowledged before, unchanged; a valid history; a next turn that works. */
async function afterwards(session: Session, before: string[]): Promise<string[]> {
  const problems = historyProblems(session.history);
  const now = logEntriesOf(session.dir).map((e) => JSON.stringify(e));
  if (before.some((line, i) => now[i] !== line)) problems.push('an acknowledged log line changed or went missing');
  const next = await session.prompt('a normal question');
  if (next.status !== 'done') problems.push(`the next turn ended ${next.status}: ${next.error?.message}`);
  return problems;
}

/** A model that puts 200 KB of one letter in a tool call's arguments: the turn goes on, the event loop is not held. */
async function longArgumentCase(tally: Tally, figures: string[], home: string): Promise<void> {
  let calls = 0;
  const policy = (): PolicyReply =>
    calls++ === 0
      ? { toolCalls: [{ name: 'write', arguments: JSON.stringify({ path: 'detail/run.md', content: 'a'.repeat(200_000) }) }] }
      : { content: 'Written.' };
  await withServer(policy, { chunkChars: 4096 }, async (server) => {
    // Room for the long answer: 200 KB is within twice this maximum output.
    const llm = llmFor(server, { contextWindow: 200_000, maxOutputTokens: 60_000 });
    const session = await createSession({ llm, home, cwd: '/llm/long', env: {}, trace: false });
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const started = performance.now();
    const result = await session.prompt('write a long run');
    const ms = performance.now() - started;
    lag.disable();
    const problems = result.status === 'done' ? [] : [`the turn ended ${result.status}: ${result.error?.message}`];
    problems.push(...historyProblems(session.history));
    await session.close();
    const maxLag = lag.max / 1e6;
    figures.push(
      `a tool call with 200 KB of "a" in its arguments, through the real client: the turn took ${seconds(ms)}, the event loop was held at most ${maxLag.toFixed(0)} ms`,
    );
    tally.add(
      'a tool call with 200 KB of one letter',
      { survived: problems.length === 0 && maxLag < 5_000, detail: [...problems, `event loop held ${maxLag.toFixed(0)} ms`].join('; ') },
      'the turn completes, the event loop is not held',
    );
  });
}

function llmFor(server: TestServer, extra: Partial<Parameters<typeof openaiChat>[0]> = {}) {
  return openaiChat({
    baseURL: server.baseURL,
    model: 'gpt-4o',
    contextWindow: 32_000,
    maxOutputTokens: 200,
    timeoutMs: 400,
    // No per-token share: the first output's wait is the stall allowance (the keep-alive case).
    firstByteMsPerPromptToken: 0,
    env: {},
    ...extra,
  });
}

/** Keep-alive chunks only, and an endless answer: each turn ends, clearly, and the session goes on. */
async function neverEndingCases(tally: Tally, home: string): Promise<void> {
  const cases: [string, Fault, string, string][] = [
    ['keep-alive chunks and no content', { type: 'keepalive', everyMs: 50 }, 'timeout', 'ends with a stall error'],
    ['an endless answer', { type: 'endless' }, 'bad_response', 'cut past twice the maximum output, not retried'],
  ];
  for (const [name, fault, kind, note] of cases) {
    await withServer(
      () => ({ content: 'A normal answer.' }),
      {},
      async (server) => {
        const session = await createSession({
          llm: llmFor(server),
          home,
          cwd: `/llm/${fault.type}`,
          env: {},
          trace: false,
          settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } },
        });
        await session.prompt('a first question');
        const before = logEntriesOf(session.dir).map((e) => JSON.stringify(e));
        // Every attempt meets the fault: a stall is retried (once here), an endless answer is not.
        server.inject(...(fault.type === 'keepalive' ? [fault, fault] : [fault]));
        const result = await Promise.race([
          session.prompt('the faulty one'),
          new Promise<TurnResult>((resolve) =>
            setTimeout(
              () =>
                resolve({
                  status: 'failed',
                  error: { kind: 'internal', message: 'did not end (hang guard)', retryable: false },
                } as TurnResult),
              HANG_MS, // a hang guard, not a speed check (test/hangGuard.ts)
            ),
          ),
        ]);
        const problems = [clearFailure(result, kind)].filter((p): p is string => p !== null);
        if (fault.type === 'endless' && server.requests.length !== 2)
          problems.push(`the endless answer was requested ${server.requests.length - 1} times`);
        problems.push(...(await afterwards(session, before)));
        await session.close();
        tally.add(name, { survived: problems.length === 0, detail: problems.join('; ') }, note);
      },
    );
  }
}

/** A key streamed 1–4 characters per delta, and a password in the base URL. */
async function secretCases(tally: Tally, home: string): Promise<void> {
  for (const chunkChars of [1, 2, 3, 4]) {
    await withServer(
      () => ({ content: `Here: ${KEY}. Again: ${KEY}` }),
      { chunkChars },
      async (server) => {
        const session = await createSession({ llm: llmFor(server, { apiKey: KEY }), home, cwd: '/llm/key', env: {} });
        const events: WorkmemEvent[] = [];
        session.on('*', (e) => events.push(e));
        const result = await session.prompt('the key?');
        await session.close();
        const streamed = events.flatMap((e) => (e.type === 'message_delta' ? [e.delta] : [])).join('');
        const leaks = [streamed, JSON.stringify(events), readFileSync(join(session.dir, 'trace.jsonl'), 'utf8')].filter((s) =>
          s.includes(KEY.slice(8)),
        );
        tally.add(
          'a key streamed a few characters per delta',
          {
            survived: result.status === 'done',
            lost: leaks.length,
            detail: `${chunkChars} per delta: ${leaks.length} place(s) show the key`,
          },
          'masked in deltas, events and trace',
        );
      },
    );
  }
  await withServer(
    () => ({ content: 'unreached' }),
    {},
    async (server) => {
      const password = 'userinfo-pa55word-xyz';
      const llm = openaiChat({ baseURL: server.baseURL.replace('http://', `http://me:${password}@`), model: 'gpt-4o', env: {} });
      const session = await createSession({
        llm,
        home,
        cwd: '/llm/userinfo',
        env: {},
        settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } },
      });
      const events: WorkmemEvent[] = [];
      session.on('*', (e) => events.push(e));
      const result = await session.prompt('q');
      await session.close();
      const places = [JSON.stringify(events), JSON.stringify(result), readFileSync(join(session.dir, 'trace.jsonl'), 'utf8'), llm.baseURL];
      const leaks = places.filter((s) => s.includes(password)).length;
      tally.add(
        'a password in the base URL',
        { survived: result.status === 'failed', lost: leaks, detail: `${leaks} place(s) show the password` },
        'shown as ***, in no event or trace',
      );
    },
  );
}
