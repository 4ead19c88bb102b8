/**
 * The process the crash harness kills. It opens (or creates) a session and runs turns
 * against an in-process model that streams, writes overview.md and detail files, calls
 * a slow host tool and compacts, in a small window so the fallback compacts as well.
 *
 * It tells the parent, on stdout and synchronously (so a kill cannot reorder it):
 *   READY <session-id>          the session is open
 *   ACK <seq> <sha256>          a message_end: the message is acknowledged
 *   WILL <path> <sha256>        a file is about to be written with this content
 *   BACKGROUND                  a summary is being prepared in the background
 * and, given a kill point, kills itself there with SIGKILL: mid-stream, mid-tool, half
 * way through writing overview.md or a log line, just before a rename, in a compaction,
 * while a background summary is in flight. Its summaries take a while (as a model's do).
 *
 * Usage: node crashChild.js <home> <session-id | new> <seed> <kill-point | none>
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { basename } from 'node:path';
import { z } from 'zod';
import { LLMError, type LLM, type LLMCallOptions, type LLMRequest, type LLMResponse, type SummarizeOptions } from '../../src/llm/llm.js';
import type { AssistantMessage } from '../../src/history/messages.js';
import { createSession, openSession, type Session } from '../../src/session/index.js';
import { diskIOFor, useDiskIO } from '../../src/storage/diskIO.js';
import { defineTool } from '../../src/tools/tool.js';
import { sha } from './hash.js';

const [home, idArg, seedArg, killArg] = process.argv.slice(2);
const seed = Number(seedArg);
const kill = parseKill(killArg ?? 'none');
const originalWrite = fs.writeSync;

function say(line: string): void {
  originalWrite(1, `${line}\n`);
}

interface KillPoint {
  where: string;
  /** Die at the nth occurrence. */
  nth: number;
}

function parseKill(spec: string): KillPoint | null {
  if (spec === 'none') return null;
  const [where, nth] = spec.split(':');
  return { where: where!, nth: Number(nth ?? 1) };
}

const seen = new Map<string, number>();
/** Count an occurrence of `where`; true when it is the one to die at. */
function due(where: string): boolean {
  if (kill?.where !== where) return false;
  const n = (seen.get(where) ?? 0) + 1;
  seen.set(where, n);
  return n === kill.nth;
}

function die(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

// Kill points inside file writes: the fs functions every module imported are replaced
// (syncBuiltinESMExports updates their named imports).
const paths = new Map<number, string>();
const originalOpen = fs.openSync;
const originalRename = fs.renameSync;
fs.openSync = ((path: fs.PathLike, ...rest: unknown[]) => {
  const fd = (originalOpen as (...a: unknown[]) => number)(path, ...rest);
  paths.set(fd, String(path));
  return fd;
}) as typeof fs.openSync;
/** Where a write of `text` to `fd` is a kill point: half of it reaches the file, then the process dies (a torn write). */
function tornAt(fd: number, text: Uint8Array): void {
  const name = basename(paths.get(fd) ?? '');
  const point = name.startsWith('.overview.md.')
    ? 'overview-write'
    : name.startsWith('.compact-')
      ? 'archive-write'
      : name.startsWith('.meta.json.')
        ? 'meta-write'
        : name === 'messages.jsonl'
          ? Buffer.from(text).includes('"type":"compaction"')
            ? 'compaction-entry'
            : 'log-append'
          : null;
  if (point && due(point)) {
    originalWrite(fd, text, 0, Math.max(1, Math.floor(text.length / 2)));
    die();
  }
}
fs.writeSync = ((fd: number, data: unknown, ...rest: unknown[]) => {
  tornAt(fd, Buffer.isBuffer(data) ? data : Buffer.from(String(data)));
  return (originalWrite as (...a: unknown[]) => number)(fd, data, ...rest);
}) as typeof fs.writeSync;
fs.renameSync = ((from: fs.PathLike, to: fs.PathLike) => {
  if (basename(String(to)) === 'overview.md' && due('overview-rename')) die();
  originalRename(from, to);
  if (basename(String(to)) === 'overview.md' && due('after-overview-rename')) die();
}) as typeof fs.renameSync;
syncBuiltinESMExports();
// On a disk the writes go to DiskIO's threads (fs calls of their own): the same kill points, before each goes.
const io = diskIOFor(home!);
if (io.offLoop)
  useDiskIO({
    offLoop: true,
    get syncs() {
      return io.syncs;
    },
    write: (fd, data, options) => {
      tornAt(fd, data);
      return io.write(fd, data, options);
    },
    sync: (fd, kind) => io.sync(fd, kind),
    truncate: (fd, size) => io.truncate(fd, size),
  });

/** The model: decides by the request, streams its text in pieces with a pause between. */
function crashModel(): LLM {
  let request = 0;
  return {
    model: 'gpt-4o',
    contextWindow: 6_000,
    maxOutputTokens: 800,
    async complete(req: LLMRequest, call: LLMCallOptions): Promise<LLMResponse> {
      request++;
      const message = decide(req, request);
      for (const piece of (message.content ?? '').match(/.{1,12}/gs) ?? []) {
        if (call.signal.aborted) throw new LLMError('aborted', 'the request was aborted');
        call.onText(piece);
        if (due('stream')) die();
        await new Promise((resolve) => setImmediate(resolve));
      }
      return { message, usage: null, finishReason: message.tool_calls ? 'tool_calls' : 'stop' };
    },
    async summarize(_req: LLMRequest, call: SummarizeOptions): Promise<LLMResponse> {
      if (call.background) say('BACKGROUND');
      for (let tick = 0; tick < 8; tick++) {
        if (call.signal.aborted) throw new LLMError('aborted', 'the request was aborted');
        if (call.background && due('background')) die();
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
      const content = `## Goal\n- Crash test, seed ${seed}.\n\n## Decisions\n- none\n\n## Progress\n- turns summarised\n\n## Open items\n- none\n\n## Key facts\n- none`;
      return { message: { role: 'assistant', content }, usage: null, finishReason: 'stop' };
    },
  };
}

function decide(req: LLMRequest, n: number): AssistantMessage {
  const last = req.messages.at(-1)!;
  if (last.role === 'tool') return { role: 'assistant', content: `Done with that (request ${n}). ${'Noted and carried on. '.repeat(4)}` };
  // Each turn of a child does one thing, and a child's turns go through them all.
  const turn = Number(/Crash turn (\d+)/.exec(typeof last.content === 'string' ? last.content : '')?.[1] ?? n);
  const kind = (turn + seed) % 6;
  const call = (name: string, args: Record<string, unknown>): AssistantMessage => ({
    role: 'assistant',
    content: `Calling ${name}.`,
    tool_calls: [{ id: `c${seed}_${n}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  });
  if (kind === 0) {
    const content = `# Working Memory\n\n## Current task\nCrash test, seed ${seed}, request ${n}.\n\n## Known facts\n- fact ${n}: value ${n * 31}\n`;
    say(`WILL working-memory/overview.md ${sha(content)}`);
    return call('write', { path: 'overview.md', content });
  }
  if (kind === 1) {
    const content = `# Notes ${n % 3}\n\n${`Line written at request ${n}.\n`.repeat(20)}`;
    say(`WILL working-memory/detail/notes-${n % 3}.md ${sha(content)}`);
    return call('write', { path: `detail/notes-${n % 3}.md`, content });
  }
  if (kind === 2) return call('lookup', { topic: `topic ${n}` });
  if (kind === 3) return call('compact_history', { target: 'all', keep_recent: 1 });
  return { role: 'assistant', content: `Answer ${n}: ${'a considered reply with some length to it, '.repeat(12)}` };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a topic up (slowly).',
  parameters: z.object({ topic: z.string() }),
  execute: async ({ topic }) => {
    for (let i = 0; i < 5; i++) {
      if (due('tool')) die();
      await new Promise((resolve) => setImmediate(resolve));
    }
    return `Found 3 entries about ${topic}. ${'Entry text. '.repeat(30)}`;
  },
});

async function main(): Promise<void> {
  // Summaries prepared in the background from a low threshold: the session is in phase 2 most of the time, and one is often in flight.
  const options = { llm: crashModel(), home: home!, env: {}, tools: [lookup], settings: { backgroundThreshold: 0.15 } };
  const session: Session = idArg === 'new' ? await createSession({ ...options, cwd: '/crash' }) : await openSession(idArg!, options);
  say(`READY ${session.id}`);
  session.on('message_end', (e) => say(`ACK ${e.seq} ${sha(JSON.stringify(e.message))}`));
  for (let t = 1; t <= 12; t++) await session.prompt(`Crash turn ${t} of seed ${seed}: ${'context for the turn. '.repeat(6)}`);
  await session.close();
  say('DONE');
}

main().catch((error: unknown) => {
  say(`FAILED ${(error as Error)?.stack ?? error}`);
  process.exit(2);
});
