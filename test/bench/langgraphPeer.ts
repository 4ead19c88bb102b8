/**
 * A peer measured in the same run as workmem: LangGraph.js, the usual way to keep an
 * agent's conversation (a graph whose state is the message list, a checkpointer saving it
 * per thread), in memory and on PostgreSQL. It is not a dependency of workmem: this script
 * installs it into a folder of its own under the temporary directory (kept, so a later run
 * starts at once: test/installedOnce.ts) and runs it there in a child process, with a model that answers at once,
 * as workmem's overhead is measured.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Row } from './harness.js';
import { installedOnce } from '../installedOnce.js';

const PACKAGES = ['@langchain/langgraph@1.7.3', '@langchain/core@1.4.0', '@langchain/langgraph-checkpoint-postgres@1.0.5', 'pg@8'];

/** What the child runs: one thread of `size` messages, then `samples` requests after `warmup`, each timed. */
const PEER = `
import { performance } from 'node:perf_hooks';
import { StateGraph, MessagesAnnotation, MemorySaver, START, END } from '@langchain/langgraph';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
const [size, warmup, samples, url] = [Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4]), process.argv[5]];
let checkpointer = new MemorySaver();
let pool = null;
if (url) {
  const { PostgresSaver } = await import('@langchain/langgraph-checkpoint-postgres');
  const pg = (await import('pg')).default;
  pool = new pg.Pool({ connectionString: url });
  checkpointer = new PostgresSaver(pool);
  await checkpointer.setup();
}
const graph = new StateGraph(MessagesAnnotation)
  .addNode('model', async () => ({ messages: [new AIMessage('Noted, thank you.')] }))
  .addEdge(START, 'model')
  .addEdge('model', END)
  .compile({ checkpointer });
const config = { configurable: { thread_id: 'bench-' + size + '-' + Date.now() } };
const history = [];
for (let i = 0; i < size; i += 2) {
  history.push(new HumanMessage('Question ' + i + ': what about topic ' + (i % 50) + '?'));
  history.push(new AIMessage('Answer ' + i + ': topic ' + (i % 50) + ' is covered.'));
}
await graph.updateState(config, { messages: history });
const times = [];
for (let i = 0; i < warmup + samples; i++) {
  const start = performance.now();
  await graph.invoke({ messages: [new HumanMessage('Question ' + i + ': what changed since the last request?')] }, config);
  if (i >= warmup) times.push(performance.now() - start);
}
if (pool) await pool.end();
process.stdout.write(JSON.stringify(times));
`;

/** The peer's folder, installed once per machine from the registry. */
function peerFolder(): string {
  const dir = installedOnce('workmem-bench-langgraph-1.7.3', PACKAGES, join('node_modules', '@langchain', 'langgraph'));
  writeFileSync(join(dir, 'peer.mjs'), PEER);
  return dir;
}

/** Per-request times of the peer at `size` messages (and a PostgreSQL checkpointer when `url` is given). */
export function langgraphTimes(size: number, warmup: number, samples: number, url?: string): Promise<number[]> {
  const dir = peerFolder();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['peer.mjs', String(size), String(warmup), String(samples), ...(url ? [url] : [])], { cwd: dir });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk));
    child.stderr.on('data', (chunk: Buffer) => void (err += chunk));
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`the LangGraph.js peer exited ${code}:\n${err}`)),
    );
  });
}

export type { Row };
