/**
 * Disk full and read-only. Each case runs a session, makes one kind of write fail
 * (injected: ENOSPC, EACCES, EROFS, EIO, EDQUOT on the log, its sync, overview.md,
 * meta.json, the trace, a compaction's archive), then lifts the fault. It survives when
 * the failure is reported the way that write's failure must be — a clear storage error
 * naming the cause and the file, or a tool error the model can read, or, for the trace,
 * nothing — the session works again once the fault is gone, and on reopening every
 * acknowledged message is there, the memory file is its old or new content, the history
 * is valid and the tracker agrees with the log.
 *
 * Where the process may mount file systems, the same is done for real on a 1 MB tmpfs
 * filled to the last byte: turns go on while the last pages of the open files have room,
 * until a write fails. (A real read-only remount is refused while the session holds
 * its log open for appending, so read-only is covered by the injected EROFS cases.)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionEvent } from '../../src/events.js';
import type { LLMRequest } from '../../src/llm/llm.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { createSession, openSession, type TurnResult } from '../../src/session/index.js';
import { historyProblems, logEntriesOf, trackerProblems } from './checks.js';
import { FsFaults, type FsFault } from './fsFaults.js';
import { sha } from './hash.js';
import { Tally, type FamilyResult } from './report.js';

/** Answers; "remember X" makes it write X into overview.md first. */
function model(request: LLMRequest): ScriptedReply {
  const last = request.messages.at(-1);
  if (last?.role === 'user' && typeof last.content === 'string' && last.content.startsWith('remember ')) {
    const fact = last.content.slice('remember '.length);
    return { toolCalls: [{ name: 'write', arguments: { path: 'overview.md', content: `# Overview\n\n## Known facts\n- ${fact}\n` } }] };
  }
  // Answers long enough for a manual compaction to find something worth archiving.
  return { text: last?.role === 'tool' ? 'Noted.' : 'An answer with a few words in it. '.repeat(12) };
}

type Expect =
  /** The turn fails with a storage error naming the cause and the file. */
  | { turn: 'fails'; file: string }
  /** The turn completes; the write tool returned an error the model reads. */
  | { turn: 'tool-error' }
  /** The turn completes with a non-fatal storage error event. */
  | { turn: 'warns'; file: string }
  /** The turn completes; nothing is said (the trace loses lines, nothing else). */
  | { turn: 'quiet' }
  /** A manual compaction is refused with a storage error; nothing is replaced. */
  | { turn: 'compaction-fails'; file: string };

interface DiskCase {
  fault: string;
  arm: Omit<FsFault, 'code'>;
  codes: FsFault['code'][];
  action: 'prompt' | 'remember' | 'compact';
  expect: Expect;
  /** Keep the fault armed this long after the action (writes made behind, like the trace's). */
  settleMs?: number;
}

const LOG = /\/messages\.jsonl$/;
const CASES: DiskCase[] = [
  {
    fault: 'append of the user message',
    arm: { file: LOG, op: 'write' },
    codes: ['ENOSPC', 'EACCES', 'EROFS', 'EDQUOT'],
    action: 'prompt',
    expect: { turn: 'fails', file: 'messages.jsonl' },
  },
  {
    fault: "append of the model's answer",
    arm: { file: LOG, op: 'write', skip: 1 },
    codes: ['ENOSPC', 'EIO'],
    action: 'prompt',
    expect: { turn: 'fails', file: 'messages.jsonl' },
  },
  {
    fault: 'append of a tool result',
    arm: { file: LOG, op: 'write', skip: 2 },
    codes: ['ENOSPC', 'EROFS'],
    action: 'remember',
    expect: { turn: 'fails', file: 'messages.jsonl' },
  },
  {
    fault: 'sync of messages.jsonl',
    arm: { file: LOG, op: 'sync' },
    codes: ['EIO', 'ENOSPC'],
    action: 'prompt',
    expect: { turn: 'fails', file: 'messages.jsonl' },
  },
  {
    fault: 'write of overview.md (temp file)',
    arm: { file: /\/\.overview\.md\.[^/]*\.tmp$/, op: 'write' },
    codes: ['ENOSPC', 'EDQUOT'],
    action: 'remember',
    expect: { turn: 'tool-error' },
  },
  {
    fault: 'create of overview.md (temp file)',
    arm: { file: /\/\.overview\.md\.[^/]*\.tmp$/, op: 'open' },
    codes: ['EACCES', 'EROFS'],
    action: 'remember',
    expect: { turn: 'tool-error' },
  },
  {
    fault: 'rename onto overview.md',
    arm: { file: /\/overview\.md$/, op: 'rename' },
    codes: ['EROFS'],
    action: 'remember',
    expect: { turn: 'tool-error' },
  },
  {
    fault: 'write of meta.json',
    arm: { file: /\/\.meta\.json\.[^/]*\.tmp$/, op: 'write' },
    codes: ['ENOSPC', 'EACCES'],
    action: 'remember',
    expect: { turn: 'warns', file: 'meta.json' },
  },
  {
    fault: 'write of trace.jsonl',
    arm: { file: /\/trace\.jsonl$/, op: 'write' },
    codes: ['ENOSPC'],
    action: 'prompt',
    expect: { turn: 'quiet' },
    settleMs: 250,
  },
  {
    fault: "write of a compaction's archive",
    arm: { file: /\/\.tmp\/\.compact-[^/]*\.tmp$/, op: 'write' }, // temp files live in the session's .tmp/
    codes: ['ENOSPC', 'EACCES'],
    action: 'compact',
    expect: { turn: 'compaction-fails', file: 'compact-' },
  },
  {
    fault: "append of a compaction's entry",
    arm: { file: LOG, op: 'write' },
    codes: ['ENOSPC'],
    action: 'compact',
    expect: { turn: 'compaction-fails', file: 'messages.jsonl' },
  },
];

const CAUSE: Record<FsFault['code'], RegExp> = {
  ENOSPC: /disk is full \(ENOSPC\)/,
  EACCES: /permission denied \(EACCES\)/,
  EROFS: /read-only \(EROFS\)/,
  EIO: /I\/O error \(EIO\)/,
  EDQUOT: /quota is used up \(EDQUOT\)/,
};

/** A session with what it acknowledged and reported recorded. */
async function started(home: string) {
  const session = await createSession({ llm: scriptedModel(model), home, cwd: '/disk', env: {} });
  const acked = new Map<number, string>();
  const events: SessionEvent[] = [];
  session.on('*', (e) => {
    events.push(e);
    if (e.type === 'message_end') acked.set(e.seq, sha(JSON.stringify(e.message)));
  });
  return { session, acked, events };
}

/** Reopen and compare with what was acknowledged and written; problems found, and how many acknowledged messages are gone. */
async function reopened(
  home: string,
  id: string,
  acked: Map<number, string>,
  overviews: Set<string>,
): Promise<{ problems: string[]; lost: number }> {
  const problems: string[] = [];
  const session = await openSession(id, { llm: scriptedModel(model), home, env: {} });
  try {
    const entries = logEntriesOf(session.dir);
    const logged = new Map<number, string>();
    for (const e of entries) if (e.type === 'message') logged.set(e.seq, sha(JSON.stringify(e.message)));
    let lost = 0;
    for (const [seq, hash] of acked) if (logged.get(seq) !== hash) lost++;
    if (lost) problems.push(`${lost} acknowledged messages missing or changed`);
    const overview = readFileSync(join(session.dir, 'working-memory', 'overview.md'), 'utf8');
    if (!overviews.has(sha(overview))) {
      problems.push('overview.md is neither its old nor its new content');
      lost++;
    }
    problems.push(...historyProblems(session.history), ...trackerProblems(session.state.tracker, entries));
    const after = await session.prompt('still there?');
    if (after.status !== 'done') problems.push(`after reopening, a turn ended ${after.status}: ${after.error?.message}`);
    return { problems, lost };
  } finally {
    await session.close();
  }
}

function judge(expect: Expect, code: FsFault['code'], result: TurnResult | Error, events: SessionEvent[]): string | null {
  const errors = events.filter((e): e is Extract<SessionEvent, { type: 'error' }> => e.type === 'error');
  const clear = (message: string, file: string) => CAUSE[code].test(message) && message.includes(file);
  if (expect.turn === 'compaction-fails') {
    if (!(result instanceof Error)) return 'the compaction reported success on a failing disk';
    return clear(result.message, expect.file) ? null : `unclear compaction error: ${result.message}`;
  }
  if (result instanceof Error) return `prompt() rejected: ${result.message}`;
  switch (expect.turn) {
    case 'fails': {
      if (result.status !== 'failed' || result.error?.kind !== 'storage')
        return `the turn ended ${result.status} (${result.error?.kind ?? 'no error'}), not a storage failure`;
      if (!clear(result.error.message, expect.file)) return `unclear error: ${result.error.message}`;
      return errors.some((e) => e.error.kind === 'storage') ? null : 'no error event';
    }
    case 'tool-error': {
      if (result.status !== 'done') return `the turn ended ${result.status}: ${result.error?.message}`;
      const tool = events.find((e): e is Extract<SessionEvent, { type: 'tool_end' }> => e.type === 'tool_end' && e.isError);
      if (!tool) return 'the write tool did not report an error';
      return tool.content.includes(code) ? null : `unclear tool error: ${tool.content}`;
    }
    case 'warns': {
      if (result.status !== 'done') return `the turn ended ${result.status}: ${result.error?.message}`;
      const warning = errors.find((e) => e.error.kind === 'storage' && !e.fatal);
      if (!warning) return 'no storage error event';
      return clear(warning.error.message, expect.file) ? null : `unclear error: ${warning.error.message}`;
    }
    case 'quiet':
      return result.status === 'done' ? null : `the turn ended ${result.status}: ${result.error?.message}`;
  }
}

async function runCase(faults: FsFaults, c: DiskCase, code: FsFault['code']): Promise<{ survived: boolean; lost: number; detail: string }> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-disk-'));
  const { session, acked, events } = await started(home);
  const problems: string[] = [];
  const overviews = new Set<string>();
  const overview = () => overviews.add(sha(session.memory()));
  let lost = 0;
  try {
    overview();
    for (const text of ['hello', 'remember the sky is blue', 'how are you', 'and now?']) await session.prompt(text);
    overview();
    events.length = 0;
    faults.arm({ ...c.arm, code });
    let result: TurnResult | Error;
    try {
      if (c.action === 'compact') {
        await session.compact({ strategy: 'archive', keepRecent: 1 });
        result = { promptId: '', turn: null, status: 'done', text: '', requests: 0 };
      } else result = await session.prompt(c.action === 'remember' ? 'remember the grass is green' : 'a question');
      if (c.settleMs) await new Promise((resolve) => setTimeout(resolve, c.settleMs));
    } catch (error) {
      result = error as Error;
    } finally {
      faults.disarm();
    }
    if (faults.failures === 0) problems.push('the fault was never hit');
    const verdict = judge(c.expect, code, result, events);
    if (verdict) problems.push(verdict);
    overview();
    const after = await session.prompt('remember space is back');
    if (after.status !== 'done') problems.push(`with the fault lifted, a turn ended ${after.status}: ${after.error?.message}`);
    overview();
  } finally {
    faults.disarm();
    await session.close();
  }
  const check = await reopened(home, session.id, acked, overviews);
  problems.push(...check.problems);
  lost += check.lost;
  rmSync(home, { recursive: true, force: true });
  return { survived: problems.length === 0, lost, detail: `${code} at ${c.fault}: ${problems.join('; ')}` };
}

/** `cases` limits the injected cases to the first code of each (the fast subset). */
export async function diskCases(options: { everyCode?: boolean; realTmpfs?: boolean } = {}): Promise<FamilyResult> {
  const tally = new Tally('disk full / read-only');
  const faults = new FsFaults().install();
  try {
    for (const c of CASES)
      for (const code of options.everyCode === false ? c.codes.slice(0, 1) : c.codes)
        tally.add(`${c.fault} (${code})`, await runCase(faults, c, code), expectation(c.expect));
  } finally {
    faults.uninstall();
  }
  const figures: string[] = [];
  if (options.realTmpfs !== false) figures.push(await realTmpfs(tally));
  return tally.result(figures);
}

function expectation(expect: Expect): string {
  switch (expect.turn) {
    case 'fails':
      return 'turn fails with a storage error naming the file and the cause';
    case 'tool-error':
      return 'write tool returns the error; old overview.md kept';
    case 'warns':
      return 'turn completes; non-fatal storage error event';
    case 'quiet':
      return 'turn completes; trace lines dropped';
    case 'compaction-fails':
      return 'compaction refused; nothing replaced';
  }
}

/** A real 1 MB tmpfs, filled up. Skipped (and said) where mounting is not allowed. */
async function realTmpfs(tally: Tally): Promise<string> {
  const mountPoint = mkdtempSync(join(tmpdir(), 'workmem-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountPoint], { stdio: 'ignore' });
  } catch {
    rmSync(mountPoint, { recursive: true, force: true });
    return 'real tmpfs: skipped — this process may not mount file systems (the injected faults above cover the same writes)';
  }
  const home = join(mountPoint, 'home');
  mkdirSync(home);
  let figure = 'real tmpfs: no turn failed';
  try {
    for (const [fault, fill] of [['a real 1 MB tmpfs, filled to the last byte', fillUp]] as const) {
      const { session, acked } = await started(home);
      const problems: string[] = [];
      const overviews = new Set([sha(session.memory())]);
      try {
        await session.prompt('remember the sky is blue');
        overviews.add(sha(session.memory()));
        const lift = fill(mountPoint);
        let result: TurnResult | Error | undefined;
        let turns = 0;
        try {
          for (; turns < 200 && (!result || (!(result instanceof Error) && result.status === 'done')); turns++)
            result = await session.prompt(`question ${turns} on a full disk`).catch((error: Error) => error);
        } finally {
          lift();
        }
        const said = result instanceof Error ? result.message : result?.error?.message;
        figure = `real 1 MB tmpfs, full: ${turns - 1} turn(s) still fitted in the open files' last pages, then: "${said}"`;
        if (!result) problems.push('no turn ran');
        else if (result instanceof Error) problems.push(`prompt() rejected: ${result.message}`);
        else if (result.status !== 'failed' || result.error?.kind !== 'storage')
          problems.push(`the turn ended ${result.status} (${result.error?.message ?? 'no error'}), not a storage failure`);
        else if (!/\(ENOSPC\) while writing/.test(result.error.message)) problems.push(`unclear error: ${result.error.message}`);
        const after = await session.prompt('remember space is back');
        if (after.status !== 'done') problems.push(`with space back, a turn ended ${after.status}: ${after.error?.message}`);
        overviews.add(sha(session.memory()));
      } finally {
        await session.close().catch((error: Error) => problems.push(`close: ${error.message}`));
      }
      const check = await reopened(home, session.id, acked, overviews);
      problems.push(...check.problems);
      tally.add(
        fault,
        { survived: problems.length === 0, lost: check.lost, detail: problems.join('; ') },
        'turn fails with a storage error; works once space is back',
      );
    }
    return figure;
  } finally {
    execFileSync('umount', [mountPoint], { stdio: 'ignore' });
    rmSync(mountPoint, { recursive: true, force: true });
  }
}

/** Fill the file system to the last byte; returns how to free it. */
function fillUp(mountPoint: string): () => void {
  const filler = join(mountPoint, 'filler');
  const chunk = Buffer.alloc(64 * 1024, 120);
  for (let size = chunk.length; size >= 1; size = Math.floor(size / 2)) {
    for (let i = 0; ; i++) {
      try {
        writeFileSync(filler, chunk.subarray(0, size), { flag: 'a' });
      } catch {
        break;
      }
    }
  }
  return () => unlinkSync(filler);
}
