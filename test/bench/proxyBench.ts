/**
 * What `workmem serve` adds per request, at 100 and 10k messages in the log, beside what a
 * Session pays for the same request to the same upstream (the test server on loopback,
 * answering at once), alternated in one run: the time to the first streamed text and to the
 * answer's end. The proxy keeps a session open between a conversation's requests (--keep-open,
 * 5 s by default), so its baseline is a Session kept open; a Session opened, prompted and
 * closed per request (what the proxy pays with --keep-open 0) is measured beside it. The proxy is the built CLI in
 * a process of its own, as it runs (in this process its disk waits would hold up the client's
 * reading); the client is the `openai` package, streaming, sending its whole conversation each
 * time as agents do. Traces are on for all, as by default. Each timed call starts from an
 * empty young generation in this process (the proxy's own collections are its own). The target is on what the proxy
 * adds to an agent's request beyond Session's own work: the proxy's time less the kept
 * Session's, less what the client pays to send its conversation to any endpoint (which it
 * pays talking to its model directly too), request by request.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { openSession, type Session } from '../../src/session/index.js';
import { startTestServer } from '../../src/testing/index.js';
import { longSession } from './hostLoopBench.js';
import type { Scale } from './benchmarks.js';
import { emptyYoungGeneration, median, now, p99, type Row } from './harness.js';
import { builtFile } from '../reliability/built.js';

const ANSWER = 'Noted, thank you.';
const TARGET_MS = 3;

/** A Session's request: [first text, end] in ms. */
async function timedPrompt(session: Session, text: string, started: number): Promise<[number, number]> {
  let first = NaN;
  const off = session.on('message_delta', () => {
    if (Number.isNaN(first)) first = now() - started;
  });
  await session.prompt(text);
  off();
  return [first, now() - started];
}

export async function proxyOverhead(scale: Scale): Promise<Row[]> {
  const rows: Row[] = [];
  const sizes = [scale.sizes[0]!, scale.sizes.includes(10_000) ? 10_000 : scale.sizes.at(-1)!];
  const warmup = Math.min(scale.warmup, 20);
  const samples = Math.min(scale.samples, 150);
  for (const size of sizes) {
    const server = await startTestServer({ policy: () => ({ content: ANSWER }), promptCaching: 'off', chunkChars: 64 });
    const home = mkdtempSync(join(tmpdir(), 'workmem-bench-proxy-'));
    const llm = () => openaiChat({ baseURL: server.baseURL, apiKey: 'bench', model: 'gpt-4o', contextWindow: 128_000, maxRetries: 0 });
    const common = { home, env: {} };
    const kept = await longSession(home, size);
    const reopened = await longSession(home, size);
    const proxied = await longSession(home, size);
    const open = await openSession(kept.id, { llm: llm(), ...common });
    const proxy = await startServe(server.baseURL, home);
    const client = new OpenAI({
      baseURL: proxy.url,
      apiKey: proxy.token,
      maxRetries: 0,
      defaultHeaders: { 'x-workmem-session': proxied.id },
    });
    const held = proxied.conversation as ChatCompletionMessageParam[];
    const echo = await startEcho();
    const direct = new OpenAI({ baseURL: echo.url, apiKey: 'bench', maxRetries: 0 });
    const t = { kept: [[], []], reopened: [[], []], proxy: [[], []], sending: [[], []] } as Record<string, [number[], number[]]>;
    for (let i = 0; i < warmup + samples; i++) {
      const question = `Question ${i}: what changed since the last request?`;
      emptyYoungGeneration();
      const keptMs = await timedPrompt(open, question, now());

      emptyYoungGeneration();
      let started = now();
      const session = await openSession(reopened.id, { llm: llm(), ...common });
      const reopenedMs = await timedPrompt(session, question, started);
      await session.close();
      reopenedMs[1] = now() - started;

      held.push({ role: 'user', content: question });
      emptyYoungGeneration();
      started = now();
      let first = NaN;
      let text = '';
      const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: held, stream: true });
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta?.content;
        if (delta && Number.isNaN(first)) first = now() - started;
        text += delta ?? '';
      }
      const proxyMs = [first, now() - started];
      // The same whole conversation to an endpoint that only reads it: what the client pays to send it anywhere.
      emptyYoungGeneration();
      started = now();
      const sent = await direct.chat.completions.create({ model: 'gpt-4o', messages: held, stream: true });
      let sendingFirst = NaN;
      for await (const chunk of sent) if (chunk.choices[0]?.delta?.content && Number.isNaN(sendingFirst)) sendingFirst = now() - started;
      const sendingMs = [sendingFirst, now() - started];
      held.push({ role: 'assistant', content: text });
      if (i < warmup) continue;
      for (const [name, ms] of [
        ['kept', keptMs],
        ['reopened', reopenedMs],
        ['proxy', proxyMs],
        ['sending', sendingMs],
      ] as const) {
        t[name]![0].push(ms[0]);
        t[name]![1].push(ms[1]);
      }
    }
    await open.close();
    await proxy.stop();
    await echo.close();
    await server.close();
    rmSync(home, { recursive: true, force: true });
    const label = size >= 1000 ? `${size / 1000}k` : String(size);
    const over = (base: string, k: 0 | 1) => t.proxy![k].map((ms, i) => ms - t[base]![k][i]!);
    // What the proxy adds to the agent's request: the client would send its conversation to its model without it too.
    const added = over('kept', 0).map((ms, i) => ms - t.sending![0][i]!);
    const row = (metric: string, what: string, samples: number[], target: boolean): Row => ({
      metric,
      case: `${label} messages in the log, ${what}`,
      median: median(samples),
      p99: p99(samples),
      unit: 'ms',
      target: target ? `median ≤ ${TARGET_MS} ms` : null,
      met: target ? median(samples) <= TARGET_MS : null,
    });
    rows.push(
      row('Proxy request, Session baseline (opened per request)', 'first streamed text', t.reopened![0], false),
      row('Proxy request, through workmem serve', 'first streamed text', t.proxy![0], false),
      row('Proxy request, through workmem serve', 'whole answer', t.proxy![1], false),
      row('Proxy overhead over Session (kept open)', 'first streamed text', over('kept', 0), false),
      row('Proxy overhead over Session (kept open)', 'whole answer', over('kept', 1), false),
      row('Proxy overhead over Session (opened per request)', 'first streamed text', over('reopened', 0), false),
      row('Of the overhead: the client sending its whole conversation', 'first streamed text', t.sending![0], false),
      row("Proxy overhead over Session (kept open), the client's sending apart", 'first streamed text', added, size === sizes.at(-1)),
    );
  }
  return rows;
}

/** The token the bench's `workmem serve` is started with. */
const BENCH_TOKEN = 'the-bench-serve-token';

/**
 * `workmem serve` from the build, in a process of its own, on the home's sessions: `args`
 * after serve's, `node` before the CLI (node's own flags), `env` added, an IPC channel when asked,
 * `bin` another checkout's CLI.
 */
export async function startServe(
  upstream: string,
  home: string,
  more: { args?: string[]; node?: string[]; env?: Record<string, string>; ipc?: boolean; bin?: string } = {},
): Promise<{ url: string; token: string; child: ChildProcess; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(more.node ?? []),
      builtFile('src/cli/bin.js'),
      'serve',
      '--upstream',
      upstream,
      '--context-window',
      '128000',
      ...(more.args ?? []),
    ],
    {
      cwd: '/',
      env: { PATH: process.env.PATH, WORKMEM_HOME: home, WORKMEM_SERVE_TOKEN: BENCH_TOKEN, ...more.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(more.ipc ? ['ipc' as const] : [])],
    },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer): void => {
      out += chunk;
      const found = /workmem serve on (http:\/\/\S+\/v1)/.exec(out)?.[1];
      if (found) resolve(found);
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`workmem serve exited (${code}): ${out}`)));
  });
  return {
    url,
    token: BENCH_TOKEN,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** An endpoint that reads and parses a request, then streams one short answer: the client's own cost of sending its conversation. */
async function startEcho(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = {
        id: 'echo',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'gpt-4o',
        choices: [{ index: 0, delta: { content: ANSWER }, finish_reason: null }],
      };
      res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
