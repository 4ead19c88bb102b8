/**
 * The process crashMany.ts kills: many sessions of one home open at once, each running
 * turns against an in-process model that streams and writes overview.md now and then, all
 * in flight together. It tells the parent, on stdout and synchronously:
 *   READY                       every session is open
 *   ACK <index> <seq> <sha256>  a message_end of session <index>: acknowledged
 *   WILL <index> <sha256>       overview.md of session <index> is about to get this content
 *
 * Usage: node crashManyChild.js <home> <file of session ids, one a line> <seed>
 */
import fs from 'node:fs';
import type { LLM } from '../../src/llm/llm.js';
import type { AssistantMessage } from '../../src/history/messages.js';
import { openSession } from '../../src/session/index.js';
import { sha } from './hash.js';

const [home, idsFile, seedArg] = process.argv.slice(2);
const seed = Number(seedArg);
const say = (line: string): void => void fs.writeSync(1, `${line}\n`);

/** Streams its answer in pieces; every third turn writes overview.md first. */
function model(index: number): LLM {
  let n = 0;
  return {
    model: 'gpt-4o',
    contextWindow: 32_000,
    maxOutputTokens: 800,
    async complete(request, call) {
      n++;
      const last = request.messages.at(-1)!;
      let message: AssistantMessage;
      if (last.role !== 'tool' && (n + seed + index) % 3 === 0) {
        const content = `# Working Memory\n\n## Current task\nSession ${index}, seed ${seed}, request ${n}.\n`;
        say(`WILL ${index} ${sha(content)}`);
        const args = JSON.stringify({ path: 'overview.md', content });
        message = {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `w${seed}_${index}_${n}`, type: 'function', function: { name: 'write', arguments: args } }],
        };
      } else message = { role: 'assistant', content: `Answer ${n} of session ${index}: ${'a reply of some length, '.repeat(6)}` };
      for (const piece of (message.content ?? '').match(/.{1,16}/gs) ?? []) {
        call.onText(piece);
        await new Promise((resolve) => setImmediate(resolve));
      }
      return { message, usage: null, finishReason: message.tool_calls ? 'tool_calls' : 'stop' };
    },
  };
}

async function main(): Promise<void> {
  const ids = fs.readFileSync(idsFile!, 'utf8').trim().split('\n');
  const sessions = await Promise.all(ids.map((id, i) => openSession(id, { llm: model(i), home: home!, env: {} })));
  sessions.forEach((s, i) => s.on('message_end', (e) => say(`ACK ${i} ${e.seq} ${sha(JSON.stringify(e.message))}`)));
  say('READY');
  await Promise.all(
    sessions.map(async (s, i) => {
      for (let t = 1; t <= 40; t++) await s.prompt(`Turn ${t} of session ${i}, seed ${seed}: ${'some context. '.repeat(4)}`);
    }),
  );
  await Promise.all(sessions.map((s) => s.close()));
  say('DONE');
}

main().catch((error: unknown) => {
  say(`FAILED ${(error as Error)?.stack ?? error}`);
  process.exit(2);
});
