/**
 * A LangChain agent whose conversation has reached `size` messages, per call (issue 39):
 * with workmem's middleware (its session holding the same conversation, all but the last
 * 200 messages behind a compaction, so they leave the agent's state on the first call) and
 * with LangChain's own summarizationMiddleware (after its one summarising call, which the
 * warm-up holds), alternated in one process, each call from an empty young generation. Both
 * agents keep their state from call to call, as a checkpointer would, and have one tool of
 * their own. The models answer at once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent, summarizationMiddleware, tool } from 'langchain';
import { z } from 'zod';
import { requestMessagesOf } from '../../src/langchain/langchainMessages.js';
import { createWorkmem } from '../../src/langchain/workmemMiddleware.js';
import { longSession } from './hostLoopBench.js';
import { emptyYoungGeneration, median, now, p99, type Row } from './harness.js';

const ANSWER = 'Noted, thank you.';

export async function langchainAgentState(size: number, warmup: number, samples: number): Promise<Row[]> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-bench-lc-'));
  const rounds = warmup + samples;
  const answering = (extra = 0) => {
    const model = fakeModel();
    for (let i = 0; i < rounds + extra; i++) model.respond(() => new AIMessage(ANSWER));
    return model;
  };
  const lookup = tool(async ({ query }: { query: string }) => `Nothing on ${query}.`, {
    name: 'lookup',
    description: 'Look a question up in the knowledge base',
    schema: z.object({ query: z.string() }),
  });
  const session = await longSession(home, size);
  const start = requestMessagesOf(session.conversation).messages;
  const model = answering();
  const workmem = await createWorkmem({ sessionId: session.id, contextWindow: 128_000, home, env: {}, trace: false, model });
  const summarizer = answering(1);
  const agents = {
    workmem: { run: createAgent({ model, tools: [lookup], middleware: [workmem.middleware] }), model, messages: start },
    summarization: {
      // It summarises once the conversation passes 100k tokens (the first call), keeping the last 200 messages as workmem's history does.
      run: createAgent({
        model: summarizer,
        tools: [lookup],
        middleware: [summarizationMiddleware({ model: answering(1), trigger: { tokens: 100_000 }, keep: { messages: 200 } })],
      }),
      model: summarizer,
      messages: start,
    },
  };
  const times: Record<keyof typeof agents, number[]> = { workmem: [], summarization: [] };
  try {
    for (let i = 0; i < rounds; i++) {
      const order = (i % 2 ? ['summarization', 'workmem'] : ['workmem', 'summarization']) as (keyof typeof agents)[];
      for (const name of order) {
        const agent = agents[name];
        emptyYoungGeneration();
        const t = now();
        agent.messages = (await agent.run.invoke({ messages: [...agent.messages, new HumanMessage(`Question ${i}: what now?`)] }))
          .messages as BaseMessage[];
        const ms = now() - t;
        agent.model.calls.length = 0; // the fake model keeps every call's messages
        if (i >= warmup) times[name].push(ms);
      }
    }
  } finally {
    await workmem.close();
    rmSync(home, { recursive: true, force: true });
  }
  const label = size >= 1000 ? `${size / 1000}k` : String(size);
  const ratio = median(times.workmem) / median(times.summarization);
  return [
    {
      metric: "LangChain agent per call, workmem's middleware",
      case: `${label} messages, all but the last 200 archived (they leave the agent's state)`,
      median: median(times.workmem),
      p99: p99(times.workmem),
      unit: 'ms',
      target: null,
      met: null,
      note: `(the agent holds ${agents.workmem.messages.length} messages at the end)`,
    },
    {
      metric: "LangChain agent per call, LangChain's summarizationMiddleware",
      case: `${label} messages, after its summarising call (keeps the last 200)`,
      median: median(times.summarization),
      p99: p99(times.summarization),
      unit: 'ms',
      target: null,
      met: null,
      note: `(the agent holds ${agents.summarization.messages.length} messages at the end)`,
    },
    {
      metric: 'LangChain agent per call, workmem ÷ summarizationMiddleware',
      case: `${label} messages, same run`,
      median: ratio,
      p99: null,
      unit: '×',
      target: size >= 10_000 ? '≤ 1 ×' : null,
      met: size >= 10_000 ? ratio <= 1 : null,
    },
  ];
}
