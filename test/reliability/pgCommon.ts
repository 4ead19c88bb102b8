/**
 * What the Postgres family's cases share: the model the instances talk to (the test
 * server, its replies tagged with the prompt's tag so the log shows who wrote what), the
 * instance processes (pgInstance.ts), and the checks of a session's log read straight from
 * the `entries` table.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import pg from 'pg';
import type { ChatMessage } from '../../src/history/messages.js';
import { openaiChat, type OpenAIChat } from '../../src/llm/openaiChat.js';
import type { LogEntry } from '../../src/storage/messageLog.js';
import type { Policy, TestServer } from '../../src/testing/index.js';
import type { PostgresServer } from '../storage/postgresServer.js';
import type { Tally } from './report.js';
import { builtFile } from './built.js';
import type { InstanceConfig } from './pgInstance.js';

/** What every case of the family gets: the server, the model, a scratch home, where to count. */
export interface PgRun {
  server: PostgresServer;
  model: TestServer;
  home: string;
  tally: Tally;
  figures: string[];
  seed: number;
}

/** An instance's model: the test server, no retries (a fault shows as it is). */
export function modelOf(run: PgRun): OpenAIChat {
  return openaiChat({ baseURL: run.model.baseURL, apiKey: 'k', model: 'gpt-4o', env: {}, maxRetries: 0 });
}

/** The tag of a prompt: `[A 3] …` → `A 3`. */
function tagOf(messages: ChatMessage[]): string {
  const user = messages.findLast((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('['));
  return /^\[([^\]]+)\]/.exec((user?.content as string | undefined) ?? '')?.[1] ?? '?';
}

/**
 * Every answer names the tag of the prompt it answers; every fourth turn writes
 * overview.md first (a memory-file transaction). A tag starting with `slow` waits 150 ms
 * before answering, so a fault can land while the request is out.
 */
export const taggedPolicy: Policy = async (request) => {
  const tag = tagOf(request.messages);
  const last = request.messages.at(-1)!;
  if (tag.startsWith('slow')) await new Promise((resolve) => setTimeout(resolve, 150));
  if (last.role === 'tool') return { content: `[${tag}] written.` };
  const turn = Number(tag.split(' ')[1] ?? 0);
  if (turn % 4 === 2) {
    const content = `# Working Memory\n\n## Current task\nWritten by ${tag}.\n`;
    return {
      content: `[${tag}] writing overview.md.`,
      toolCalls: [{ id: `call_${tag.replace(/\W/g, '_')}`, name: 'write', arguments: JSON.stringify({ path: 'overview.md', content }) }],
    };
  }
  return { content: `[${tag}] ${'An answer of some length. '.repeat(8)}` };
};

/** Who wrote an entry, by the tag in it (or in the call it answers); null for untagged entries. */
export function writerOf(entry: LogEntry): string | null {
  if (entry.type !== 'message') return null;
  const m = entry.message;
  if (m.role === 'tool') return /^call_([A-Za-z]+)/.exec(m.tool_call_id)?.[1] ?? null;
  const text = typeof m.content === 'string' ? m.content : '';
  return /^\[([A-Za-z]+)/.exec(text)?.[1] ?? null;
}

export interface LogCheck {
  entries: LogEntry[];
  problems: string[];
}

/** The session's log as the table holds it: every row a whole entry, seqs 1…n without a gap, turns never going back. */
/**
 * The server's own view of a session's lease: when it ends and what time it is now, both by
 * the server's clock (the one the store's takeover compares), in epoch milliseconds.
 */
export async function leaseClock(url: string, schema: string, id: string): Promise<{ until: number; now: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ until: number | null; now: number }>(
      `SELECT (SELECT (extract(epoch FROM expires_at) * 1000)::float8 FROM ${schema}.leases WHERE session_id = $1) AS until,
              (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`,
      [id],
    );
    return { until: rows[0]?.until ?? -Infinity, now: rows[0]!.now };
  } finally {
    await client.end();
  }
}

export async function checkLog(url: string, schema: string, id: string): Promise<LogCheck> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ seq: string; body: string }>(
      `SELECT seq, body FROM ${schema}.entries WHERE session_id = $1 ORDER BY seq`,
      [id],
    );
    const entries: LogEntry[] = [];
    const problems: string[] = [];
    let lastTurn = 0;
    rows.forEach((row, i) => {
      if (Number(row.seq) !== i + 1) problems.push(`seq ${row.seq} is row ${i + 1}: a gap`);
      let entry: LogEntry;
      try {
        entry = JSON.parse(row.body) as LogEntry;
      } catch {
        problems.push(`seq ${row.seq} is not whole JSON`);
        return;
      }
      if (entry.seq !== Number(row.seq)) problems.push(`seq ${row.seq} holds an entry stamped ${entry.seq}`);
      if (entry.turn < lastTurn) problems.push(`seq ${row.seq} is of turn ${entry.turn}, after turn ${lastTurn}: interleaved`);
      lastTurn = Math.max(lastTurn, entry.turn);
      entries.push(entry);
    });
    return { entries, problems };
  } finally {
    await client.end();
  }
}

export function newSchema(): string {
  return `workmem_f_${randomBytes(5).toString('hex')}`;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** An instance process and what it has said so far. */
export interface Instance {
  pid: number;
  lines: string[];
  /** Resolves with the first line matching, or null after `ms` (or when the process is gone). */
  waitFor(match: RegExp, ms: number): Promise<string | null>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal(name: NodeJS.Signals): void;
}

export function startInstance(config: InstanceConfig): Instance {
  const child = spawn(process.execPath, [builtFile('test/reliability/pgInstance.js'), JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: { match: RegExp; resolve: (line: string | null) => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.match.test(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => lines.push(`STDERR ${d.trim()}`));
  let gone = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      gone = true;
      // The last lines may still be in the pipe: let readline deliver them first.
      setTimeout(() => {
        for (const w of waiters.splice(0)) w.resolve(null);
        resolve({ code, signal });
      }, 50);
    }),
  );
  return {
    pid: child.pid!,
    lines,
    exited,
    signal: (name) => void (gone || child.kill(name)),
    waitFor: (match, ms) => {
      const seen = lines.find((l) => match.test(l));
      if (seen) return Promise.resolve(seen);
      if (gone) return Promise.resolve(null);
      return new Promise((resolve) => {
        const waiter = { match, resolve };
        waiters.push(waiter);
        setTimeout(() => {
          const i = waiters.indexOf(waiter);
          if (i >= 0) {
            waiters.splice(i, 1);
            resolve(null);
          }
        }, ms);
      });
    },
  };
}

/** The acknowledged messages an instance reported: seq → sha256 of the message. */
export function acksOf(lines: string[]): [number, string][] {
  return lines.filter((l) => l.startsWith('ACK ')).map((l) => [Number(l.split(' ')[1]), l.split(' ')[2]!]);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A small seeded generator (the same one as the crash family's). */
export function seeded(seed: number): (n: number) => number {
  let rand = seed;
  return (n) => {
    rand = (rand * 1103515245 + 12345) % 2 ** 31;
    return rand % n;
  };
}
