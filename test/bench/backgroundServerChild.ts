/**
 * The child of backgroundBench.ts: the model, out of the measured process (as a hosted model
 * is): test servers whose answers take `modelMs` and whose summaries take `summaryMs`. Prints
 * their base URLs as a JSON line; each line read on stdin is answered with the prompt tokens
 * each server was sent, for answers and for summaries.
 */
import { createInterface } from 'node:readline';
import { SUMMARIZER_MARK } from '../../src/compaction/summarizer.js';
import { startTestServer, type ChatRequest } from '../../src/testing/index.js';

const { servers, modelMs, summaryMs } = JSON.parse(process.argv[2]!) as { servers: number; modelMs: number; summaryMs: number };

const SUMMARY = `## Goal\n- Plan the trip.\n\n## Decisions\n- ${'a decision with its reason, '.repeat(4)}\n\n## Progress\n- ${'what was done, '.repeat(6)}\n\n## Open items\n- none\n\n## Key facts\n- ${'a fact the user gave, '.repeat(8)}`;
const isSummary = (body: ChatRequest): boolean => String(body.messages[0]?.content ?? '').includes(SUMMARIZER_MARK);

const started = await Promise.all(
  Array.from({ length: servers }, () =>
    startTestServer({
      policy: (body) =>
        isSummary(body) ? { content: SUMMARY } : { content: `Noted. ${'A reply with some substance to it. '.repeat(18)}` },
      faults: (_, body) => ({ type: 'latency', ms: isSummary(body) ? summaryMs : modelMs }),
      promptCaching: 'off',
    }),
  ),
);
process.stdout.write(`${JSON.stringify(started.map((s) => s.baseURL))}\n`);
for await (const _ of createInterface({ input: process.stdin })) {
  const stats = started.map((server) => {
    const answered = server.requests.filter((r) => r.status === 200);
    const summaries = answered.filter((r) => isSummary(r.body));
    return {
      answers: answered.filter((r) => !isSummary(r.body)).reduce((n, r) => n + r.promptTokens, 0),
      summaries: summaries.reduce((n, r) => n + r.promptTokens, 0),
      summaryRequests: summaries.length,
    };
  });
  process.stdout.write(`${JSON.stringify(stats)}\n`);
}
await Promise.all(started.map((s) => s.close()));
