/**
 * Issue 19's guard cases at full size: a 10 MB tool name, a 10 MB answer and a 2 MB prompt
 * (bounded at capture, nothing frozen, nothing lost); 300 writes of 230 KB in one turn (the
 * per-turn quota); a secret as tool name and call id (masked in every event); look-alike
 * framing tags (white space after the bracket too) through tool output, overview.md, a
 * read-back detail file and a summary; an overview.md that is a planted symlink or a 1 GiB
 * sparse file; a child process swapping a folder for a symlink while the read tool reads
 * (0 bytes from outside); the session write quota; and item memory of users whose ids
 * extend one another's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionEvent } from '../../src/events.js';
import type { LLMRequest, LLMResponse } from '../../src/llm/llm.js';
import { memoryTools } from '../../src/tools/memoryTools.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { createSession, type Session, type SessionOptions } from '../../src/session/index.js';
import { MAX_RESPONSE_ARGUMENT_BYTES } from '../../src/tools/toolArguments.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { memoryOnDisk } from '../storage/memoryOnDisk.js';
import { Tally, type FamilyResult } from './report.js';

const FAMILY = 'guard';

/** White space between the bracket, the slash and the name (issue 24 #14): a model still reads the tag. */
export const SPACED_LOOK_ALIKES = [
  '< context_meta>',
  '<  working_memory>',
  '<\tmemory_reminder>',
  '<\ndetail_index>',
  '< /working_memory>',
  '</ working_memory>',
  '< / context_meta >',
  '<\u00A0relevant_memories>',
  '<\u3000context_meta>',
  '<\u200B context_meta>',
  '\uFF1C context_meta>',
];

export const LOOK_ALIKES = [
  ...SPACED_LOOK_ALIKES,
  '<context\u200B_meta>',
  '<context\u200D_meta>',
  '<wor\u00ADking_memory>',
  '\uFF1Ccontext_meta\uFF1E',
  '\uFE64memory_reminder\uFE65',
  '<context\u2010meta>',
  '<context-meta>',
  '</working\u200B_memory>',
  '<\uFF43\uFF4F\uFF4E\uFF54\uFF45\uFF58\uFF54_meta>',
  '<detail\uFE63index>',
];

/** Each look-alike that still reaches `text` with a bracket of its own. */
export function unneutralised(text: string): string[] {
  return LOOK_ALIKES.filter((fake) => text.includes(fake) || !text.includes(`&lt;${fake.slice(1)}`));
}

const textOf = (request: LLMRequest) => request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

interface Harness {
  session: Session;
  llm: ReturnType<typeof scriptedModel>;
  events: SessionEvent[];
  next(reply: ScriptedReply): void;
}

async function harness(home: string, options: Partial<SessionOptions> = {}, summary?: string): Promise<Harness> {
  const replies: ScriptedReply[] = [];
  const llm = scriptedModel((request) =>
    request.messages.at(-1)?.role === 'user' ? (replies.shift() ?? { text: 'ok' }) : { text: 'Done.' },
  );
  if (summary)
    Object.assign(llm, {
      summarize: async (): Promise<LLMResponse> => ({
        message: { role: 'assistant', content: summary },
        usage: null,
        finishReason: 'stop',
      }),
    });
  const session = await createSession({ llm, home, cwd: '/guard', env: {}, trace: false, ...options });
  const events: SessionEvent[] = [];
  session.on('*', (e) => events.push(e));
  return { session, llm, events, next: (r) => replies.push(r) };
}

/** Run `body` against a fresh session in its own home, always cleaned up. */
async function withSession<T>(
  options: Partial<SessionOptions>,
  body: (h: Harness, home: string) => Promise<T>,
  summary?: string,
): Promise<T> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-guard-'));
  const h = await harness(home, options, summary);
  try {
    return await body(h, home);
  } finally {
    await h.session.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** `mb` of tool name and of answer (10 in the full run). */
async function captureBounds(tally: Tally, mb: number): Promise<void> {
  await withSession({}, async (h) => {
    h.next({ toolCalls: [{ name: 'a'.repeat(mb * 1024 * 1024), arguments: {} }] });
    const t = performance.now();
    const result = await h.session.prompt('call it');
    const end = h.events.find((e): e is Extract<SessionEvent, { type: 'tool_end' }> => e.type === 'tool_end');
    const log = statSync(join(h.session.dir, 'messages.jsonl')).size;
    const ok = result.status === 'done' && end?.isError === true && end.content.includes(`tool name of ${mb}.0 MB`) && log < 64 * 1024;
    tally.add(
      `a ${mb} MB tool name`,
      { survived: ok, detail: `${result.status}, ${end?.content.slice(0, 120)}, log ${log} B` },
      `answered with an error in ${((performance.now() - t) / 1000).toFixed(1)} s; log ${(log / 1024).toFixed(1)} KB`,
    );

    h.events.length = 0;
    const answer = `# Long\n${'word '.repeat((mb * 1024 * 1024) / 5)}END`;
    h.next({ text: answer, chunks: 100 });
    const turn = await h.session.prompt('say a lot');
    const saved = readdirSync(join(h.session.dir, 'working-memory', 'detail', 'tool-outputs')).filter((n) => n.endsWith('.answer.md'));
    const whole = saved.some((n) => statSync(join(h.session.dir, 'working-memory', 'detail', 'tool-outputs', n)).size === answer.length);
    const stored = h.events.find((e) => e.type === 'message_end' && e.message.role === 'assistant' && e.message.content !== 'Done.');
    const storedLength = stored?.type === 'message_end' ? String(stored.message.content).length : -1;
    tally.add(
      `a ${mb} MB answer`,
      { survived: turn.status === 'done' && whole && storedLength > 0 && storedLength < 260 * 1024, lost: whole ? 0 : 1 },
      'capped at 256 KB in the history; whole in detail/',
    );

    const before = statSync(join(h.session.dir, 'messages.jsonl')).size;
    let refused = '';
    await h.session.prompt('a'.repeat(2 * 1024 * 1024)).catch((e: Error) => (refused = e.message));
    const unchanged = statSync(join(h.session.dir, 'messages.jsonl')).size === before;
    tally.add(
      'a 2 MB user prompt',
      { survived: /at most 1 MB/.test(refused) && unchanged, detail: refused },
      'refused before anything is written',
    );
  });
}

/**
 * The 300 writes of 230 KB in one response against the default 8 MB quota; `fast`:
 * 60 writes against 2 MB. Two bounds hold: files written stay within the quota, and the
 * log keeps at most one response's argument budget (the calls past it are dropped, each
 * answered with an error saying so).
 */
async function writeQuota(tally: Tally, fast: boolean): Promise<void> {
  const [count, quotaMB] = fast ? [60, 2] : [300, 8];
  await withSession(fast ? { settings: { writeQuotaBytes: quotaMB * 1024 * 1024 } } : {}, async (h) => {
    const chunk = 'abcdefg '.repeat((230 * 1024) / 8); // 230 KB
    h.next({
      toolCalls: Array.from({ length: count }, (_, i) => ({ name: 'write', arguments: { path: `detail/w${i}.md`, content: chunk } })),
    });
    await h.session.prompt('fill the disk');
    const ends = h.events.filter((e): e is Extract<SessionEvent, { type: 'tool_end' }> => e.type === 'tool_end');
    const detail = join(h.session.dir, 'working-memory', 'detail');
    const written = readdirSync(detail).filter((n) => n.startsWith('w'));
    const onDisk = written.reduce((n, f) => n + statSync(join(detail, f)).size, 0);
    const logBytes = statSync(join(h.session.dir, 'messages.jsonl')).size;
    const refused = ends.filter((e) => e.isError && /quota of \d+\.0 MB per turn|arguments dropped/.test(e.content)).length;
    const budget = MAX_RESPONSE_ARGUMENT_BYTES + 256 * 1024; // the arguments kept, and the notes and results
    tally.add(
      `${count} writes of 230 KB in one response`,
      {
        survived: onDisk <= quotaMB * 1024 * 1024 && logBytes <= budget && refused + written.length === count && refused > 0,
        detail: `${(onDisk / 1048576).toFixed(1)} MB in files, ${(logBytes / 1048576).toFixed(1)} MB of log, ${written.length} written, ${refused} refused`,
      },
      `${(onDisk / 1048576).toFixed(1)} MB in files, ${(logBytes / 1048576).toFixed(1)} MB of log; ${written.length} written, ${refused} refused`,
    );
  });
}

/**
 * Issue 24 #15: turn after turn of 1 MB of notes in new files (the six turns held 10.9
 * MB) against the session's quota, the default 32 MB (`fast`: 4 MB). What the files hold
 * stays within it, every write past it is refused saying so, and trimming a file makes room.
 */
async function sessionQuota(tally: Tally, fast: boolean): Promise<void> {
  const [turns, quotaMB] = fast ? [6, 4] : [40, 32];
  await withSession(fast ? { settings: { sessionWriteQuotaBytes: quotaMB * 1024 * 1024 } } : {}, async (h) => {
    const note = 'notes '.repeat((200 * 1024) / 6); // five per turn: one tool call's arguments are at most 256 KB
    for (let i = 0; i < turns; i++) {
      h.next({ toolCalls: [0, 1, 2, 3, 4].map((k) => ({ name: 'write', arguments: { path: `detail/q${i}-${k}.md`, content: note } })) });
      await h.session.prompt(`note ${i}`);
    }
    const ends = h.events.filter((e): e is Extract<SessionEvent, { type: 'tool_end' }> => e.type === 'tool_end');
    const written = ends.filter((e) => !e.isError).length;
    const refused = ends.filter((e) => e.isError && e.content.includes(`of this session's quota of ${quotaMB}.0 MB`)).length;
    h.next({ toolCalls: [{ name: 'write', arguments: { path: 'detail/q0-0.md', content: '' } }] });
    await h.session.prompt('trim the first');
    h.next({ toolCalls: [{ name: 'write', arguments: { path: 'detail/after-trim.md', content: note } }] });
    await h.session.prompt('one more');
    const afterTrim = h.events.filter((e): e is Extract<SessionEvent, { type: 'tool_end' }> => e.type === 'tool_end').slice(-2);
    const detail = join(h.session.dir, 'working-memory', 'detail');
    // The model's files only: the history's compaction archives beside them are workmem's.
    const held = readdirSync(detail).reduce((n, f) => n + (/^(q|after-trim)/.test(f) ? statSync(join(detail, f)).size : 0), 0);
    tally.add(
      `${turns} turns of 1 MB notes against a ${quotaMB} MB session quota`,
      {
        survived: held <= quotaMB * 1024 * 1024 && refused > 0 && written + refused === turns * 5 && afterTrim.every((e) => !e.isError),
        detail: `${(held / 1048576).toFixed(1)} MB held, ${written} written, ${refused} refused; after a trim: ${afterTrim.map((e) => e.content.slice(0, 80)).join(' / ')}`,
      },
      `${(held / 1048576).toFixed(1)} MB held; ${written} written, ${refused} refused with the usage and the limit; a trim made room`,
    );
  });
}

/**
 * Issue 24 #1: users whose ids extend one another (`org1` and `org1:alice`) share a state
 * store; each request carries its own user's items only, whatever the ids.
 */
async function itemOwners(tally: Tally): Promise<void> {
  const pairs = [
    ['org1', 'org1:alice'],
    ['a', 'a:'],
    ['team.x', 'team.x:y:z'],
    ['u', 'u%3Az'],
    ['bob@example.com', 'bob@example.com/2'],
    ['张', '张:三'],
  ];
  const home = mkdtempSync(join(tmpdir(), 'workmem-guard-items-'));
  try {
    for (const [i, users] of pairs.entries()) {
      const facts = users.map((user, j) => `Fact ${i}-${j} of the ledger belongs to ${user} only.`);
      for (const [j, user] of users.entries()) {
        const remember = { toolCalls: [{ name: 'remember', arguments: { content: facts[j], importance: 0.9 } }] };
        const session = await createSession({
          llm: scriptedModel([remember, { text: 'Noted.' }]),
          home,
          cwd: '/guard',
          env: {},
          trace: false,
          itemMemory: { scope: 'user', userId: user! },
        });
        await session.prompt('remember this');
        await session.close();
      }
      for (const [j, user] of users.entries()) {
        const llm = scriptedModel([{ text: 'ok' }]);
        const session = await createSession({
          llm,
          home,
          cwd: '/guard',
          env: {},
          trace: false,
          itemMemory: { scope: 'user', userId: user!, inject: {} },
        });
        await session.prompt('What does the ledger say?');
        await session.close();
        const sent = JSON.stringify(llm.requests);
        const leaked = facts.filter((fact, k) => k !== j && sent.includes(fact)).length;
        tally.add(
          "item memory of users whose ids extend one another's",
          { survived: leaked === 0 && sent.includes(facts[j]!), lost: leaked, detail: `${user}: ${leaked} of the other user's items sent` },
          `${pairs.length * 2} users: each request carried its own items, none of the other's`,
        );
      }
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function masking(tally: Tally): Promise<void> {
  const secret = 'sk-guard-0123456789abcdefghij';
  await withSession({ secrets: [secret] }, async (h) => {
    h.next({ toolCalls: [{ name: secret, id: secret, arguments: {} }] });
    await h.session.prompt('go');
    const shown = JSON.stringify(h.events.filter((e) => ['tool_start', 'tool_end', 'message_end'].includes(e.type)));
    tally.add(
      'a key as tool name and call id',
      { survived: !shown.includes(secret), lost: shown.includes(secret) ? 1 : 0 },
      'masked in every event',
    );
  });
}

async function lookAlikes(tally: Tally): Promise<void> {
  const fake = `# Notes\n${LOOK_ALIKES.join('\n')}\n`;
  const summary = `## Goal\n- g\n## Decisions\n- d\n## Progress\n${LOOK_ALIKES.join('\n')}\n## Open items\n- none\n## Key facts\n- none`;
  await withSession(
    // The floor off: these turns use a few % of the window, and the summary is what is checked.
    { settings: { injectHistory: true, compactHistoryFloor: 0 } },
    async (h) => {
      const check = (path: string, text: string): void => {
        const left = unneutralised(text);
        for (const f of LOOK_ALIKES)
          tally.add(`look-alike tags through ${path}`, { survived: !left.includes(f), detail: JSON.stringify(f) });
      };
      h.next({ toolCalls: [{ name: 'write', arguments: { path: 'detail/n.md', content: fake } }] });
      await h.session.prompt(`note: ${'context '.repeat(100)}`);
      h.next({ toolCalls: [{ name: 'read', arguments: { path: 'detail/n.md' } }] });
      await h.session.prompt(`read back: ${'context '.repeat(100)}`);
      const read = h.events.filter((e): e is Extract<SessionEvent, { type: 'tool_end' }> => e.type === 'tool_end').at(-1)!;
      check('a read-back detail file (tool output)', read.content);
      h.next({ toolCalls: [{ name: 'write', arguments: { path: 'overview.md', content: fake } }] });
      await h.session.prompt(`remember: ${'context '.repeat(100)}`);
      const system = h.llm.requests.at(-1)!.messages[0];
      check('overview.md', typeof system?.content === 'string' ? system.content : '');
      h.next({ toolCalls: [{ name: 'compact_history', arguments: { target: 'conversation', strategy: 'summarize', keep_recent: 0 } }] });
      await h.session.prompt('compact now');
      await h.session.prompt('next');
      const last = textOf(h.llm.requests.at(-1)!);
      check('a compaction summary', last.includes('## Progress') ? last : '');
    },
    summary,
  );
}

async function overviewFile(tally: Tally): Promise<void> {
  await withSession({}, async (h, home) => {
    writeFileSync(join(home, 'outside.txt'), 'OUTSIDE-SECRET\n');
    const overview = join(h.session.dir, 'working-memory', 'overview.md');
    unlinkSync(overview);
    symlinkSync(join(home, 'outside.txt'), overview);
    const result = await h.session.prompt('hello');
    const leaked = h.llm.requests.some((r) => JSON.stringify(r).includes('OUTSIDE-SECRET'));
    tally.add(
      'overview.md a planted symlink',
      {
        survived: !leaked && /symlink/.test(result.error?.message ?? ''),
        lost: leaked ? 1 : 0,
        detail: result.error?.message ?? result.status,
      },
      'refused, target never sent',
    );
    unlinkSync(overview);
    writeFileSync(overview, '# Overview\n');
    truncateSync(overview, 1024 ** 3);
    const big = await h.session.prompt('hello again');
    tally.add(
      'overview.md of 1 GiB (sparse)',
      { survived: /overview\.md is 1024\.0 MB.*at most 1\.0 MB/.test(big.error?.message ?? ''), detail: big.error?.message ?? big.status },
      'refused by size before reading',
    );
  });
}

/**
 * A child swapping `<detail>/sub` between the real folder and a symlink to `outside`, forever.
 * It sleeps a random fraction of a millisecond in each state: the swaps still land at random
 * points of a read, and a busy machine cannot starve the reader of every window (two children
 * spinning without a pause left a CI reader refused 1,500 times out of 1,500).
 */
export function spawnFlipper(detail: string, outside: string): ChildProcess {
  const script = `
    const fs = require('node:fs');
    const [sub, real, outside] = process.argv.slice(1);
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const nap = (ms) => Atomics.wait(cell, 0, 0, Math.random() * ms);
    for (;;) {
      try { fs.renameSync(sub, real); fs.symlinkSync(outside, sub); nap(0.5); fs.unlinkSync(sub); fs.renameSync(real, sub); } catch {}
      nap(1);
    }`;
  return spawn(process.execPath, ['-e', script, join(detail, 'sub'), join(detail, '.sub-real'), outside], { stdio: 'ignore' });
}

/** `reads` reads of detail/sub/f.md while two children swap detail/sub for a symlink out. */
export async function raceReads(reads: number): Promise<{ outside: number; inside: number; refused: number }> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-guard-race-'));
  const wm = await memoryOnDisk(join(home, 'wm'), join(home, 'tmp'));
  const [read] = memoryTools(wm);
  mkdirSync(join(home, 'outside'));
  writeFileSync(join(home, 'outside', 'f.md'), 'OUTSIDE');
  mkdirSync(join(home, 'wm', 'detail', 'sub'));
  writeFileSync(join(home, 'wm', 'detail', 'sub', 'f.md'), 'INSIDE');
  const flippers = [1, 2].map(() => spawnFlipper(join(home, 'wm', 'detail'), join(home, 'outside')));
  const counts = { outside: 0, inside: 0, refused: 0 };
  try {
    await new Promise((r) => setTimeout(r, 100));
    // Past `reads`, go on (at most 3×) until one read got through: a loaded machine can starve the reader.
    for (let i = 0; i < reads || (counts.inside === 0 && i < reads * 3); i++) {
      const out = await read!.execute({ path: 'detail/sub/f.md' }, { turn: 1 } as ToolContext);
      const text = typeof out === 'string' ? out : out.content;
      if (text.includes('OUTSIDE')) counts.outside++;
      else if (text === 'INSIDE') counts.inside++;
      else counts.refused++;
    }
  } finally {
    for (const f of flippers) f.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
  return counts;
}

/** `writes` writes of detail/sub/w<i>.md while two children swap detail/sub for a symlink out: how many landed outside. */
export async function raceWrites(writes: number): Promise<{ outside: number; inside: number; refused: number }> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-guard-race-'));
  const wm = await memoryOnDisk(join(home, 'wm'), join(home, 'tmp'));
  const [, write] = memoryTools(wm);
  mkdirSync(join(home, 'outside'));
  mkdirSync(join(home, 'wm', 'detail', 'sub'));
  const flippers = [1, 2].map(() => spawnFlipper(join(home, 'wm', 'detail'), join(home, 'outside')));
  const counts = { outside: 0, inside: 0, refused: 0 };
  let tried = 0;
  try {
    await new Promise((r) => setTimeout(r, 100));
    // Past `writes`, go on (at most 3×) until one write got through: a loaded machine can starve the writer.
    for (let i = 0; i < writes || (tried === counts.refused && i < writes * 3); i++, tried++) {
      const out = await write!.execute({ path: `detail/sub/w${i}.md`, content: `W${i}` }, { turn: 1 } as ToolContext);
      if (typeof out !== 'string' && out.isError) counts.refused++;
    }
  } finally {
    for (const f of flippers) f.kill('SIGKILL');
  }
  counts.outside = readdirSync(join(home, 'outside')).length;
  counts.inside = tried - counts.refused - counts.outside;
  rmSync(home, { recursive: true, force: true });
  return counts;
}

export async function guardCases(options: { reads?: number; fast?: boolean } = {}): Promise<FamilyResult> {
  const tally = new Tally(FAMILY);
  await captureBounds(tally, options.fast ? 1 : 10);
  await writeQuota(tally, options.fast ?? false);
  await sessionQuota(tally, options.fast ?? false);
  await itemOwners(tally);
  await masking(tally);
  await lookAlikes(tally);
  await overviewFile(tally);
  const reads = options.reads ?? 1500;
  const race = await raceReads(reads);
  for (let i = 0; i < reads; i++)
    tally.add(
      'read while a folder is swapped for a symlink',
      { survived: i >= race.outside, lost: i < race.outside ? 1 : 0, detail: `${race.outside} reads returned the outside file` },
      `${race.inside} inside, ${race.refused} refused, ${race.outside} outside`,
    );
  const written = await raceWrites(reads);
  for (let i = 0; i < reads; i++)
    tally.add(
      'write while a folder is swapped for a symlink',
      { survived: i >= written.outside, lost: i < written.outside ? 1 : 0, detail: `${written.outside} writes landed outside` },
      `${written.inside} inside, ${written.refused} refused, ${written.outside} outside`,
    );
  return tally.result([
    `race: ${reads} reads, ${race.inside} returned the inside file, ${race.refused} were refused, ${race.outside} the outside one`,
    `race: ${reads} writes, ${written.inside} landed inside, ${written.refused} were refused, ${written.outside} outside`,
  ]);
}
