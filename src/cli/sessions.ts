/**
 * workmem sessions list | show <id> | rm <id> | prune --older-than <age>, and workmem memory show [<id>]: reading
 * sessions through the store (the home's folders, or Postgres with --database-url),
 * without a model and without a session's lease, so they work while it runs elsewhere.
 */
import type { CliIO, Flags } from './cliIO.js';
import { listSessions, readSession, removeSession } from '../session/index.js';
import type { MemoryFiles, MemoryReader, SessionReader, SessionStore } from '../storage/sessionStore.js';
import { listedSessions, metaOf, shownTime } from './sessionList.js';
import { defaultHome } from '../storage/sessionPaths.js';
import { WorkingMemory } from '../memory/workingMemory.js';
import { redactor } from '../secrets/redact.js';
import { terminalLine, terminalText } from './terminalText.js';
import { UsageError } from './usageError.js';
import { databaseOf, storeOf } from './databaseStore.js';
import { sessionWriteQuotaOf } from './config.js';
import { byteSize } from '../format/byteSize.js';
import { HeldWrites, heldFilesOf } from '../memory/heldWrites.js';
import type { LogEntry } from '../storage/messageLog.js';

export async function main({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const [action = 'list', id, ...extra] = positionals;
  if (extra.length) throw new UsageError(`unexpected ${JSON.stringify(extra.join(' '))}`);
  const database = databaseOf(flags, io.env);
  const store = storeOf(database);
  try {
    return await sessions(action, id, flags, io, { ...(store ? { store } : {}) }, database?.secrets ?? []);
  } finally {
    await store?.close();
  }
}

async function sessions(
  action: string,
  id: string | undefined,
  flags: Flags,
  io: CliIO,
  where: { store?: SessionStore },
  secrets: string[],
): Promise<number> {
  const home = typeof flags.home === 'string' ? flags.home : defaultHome(io.env);
  // What was written before a key was known, or under another one: masked as it is printed.
  const mask = redactor([io.env.OPENAI_API_KEY, ...secrets]);
  switch (action) {
    case 'list': {
      const sessions = await listedSessions({ home, ...where, ...(flags.all ? {} : { cwd: io.cwd }) });
      if (!sessions.length) {
        io.stdout.write(flags.all ? 'No sessions yet.\n' : `No sessions in ${terminalLine(io.cwd)} yet (--all lists every directory).\n`);
        return 0;
      }
      // A meta that cannot be read (removed meanwhile): a row of ?
      const rows = sessions.map(({ id, updatedAt, meta, title }) => [
        id.slice(0, 8),
        shownTime(updatedAt),
        String(meta?.turns ?? '?'),
        String(meta?.messageCount ?? '?'),
        meta?.historyMode ?? '?',
        mask(title),
      ]);
      io.stdout.write(table(['ID', 'UPDATED', 'TURNS', 'MESSAGES', 'MODE', 'TITLE'], rows, flags.all ? undefined : `in ${io.cwd}`));
      return 0;
    }
    case 'show': {
      if (!id) throw new UsageError('give the session id: workmem sessions show <id>');
      const session = await readSession(id, { home, ...where });
      const meta = await metaOf(session);
      const memory = await memoryOf(session);
      const { entries, damage } = await session.readLog();
      const messages = entries.flatMap((e) => (e.type === 'message' ? [e] : []));
      const out: string[] = [
        `Session ${terminalLine(meta?.id ?? id)}${meta?.name ? ` (${terminalLine(mask(meta.name))})` : ''}`,
        `  dir:      ${terminalLine(session.location)}`,
        `  cwd:      ${terminalLine(meta?.cwd ?? '?')}`,
        `  created:  ${meta ? new Date(meta.createdAt).toISOString() : '?'}    updated: ${meta ? new Date(meta.updatedAt).toISOString() : '?'}`,
        `  turns:    ${meta?.turns ?? '?'}, messages: ${messages.length}, compactions: ${entries.filter((e) => e.type === 'compaction').length}, mode: ${meta?.historyMode ?? '?'}${meta?.pinnedMode ? ' (pinned)' : ''}`,
        `  written:  ${heldLine(entries, home, io.env)}`,
        ...(damage.length ? [`  damage:   ${damage.length} damaged entries in the log, skipped`] : []),
        '',
        '--- working-memory/overview.md ---',
        memory.content.trimEnd(),
        '',
        `--- detail/ (${memory.detail.length}) ---`,
        ...memory.detail.map((d) => `  ${terminalLine(d.path)}${d.heading ? `  ${terminalLine(d.heading)}` : ''}`),
        '',
        '--- latest messages ---',
        ...messages
          .slice(-8)
          .map(
            (e) =>
              `  [${e.turn}] ${e.message.role}: ${oneLine(e.message.content ?? (e.message.role === 'assistant' ? (e.message.tool_calls ?? []).map((c) => `→ ${c.function.name}`).join(' ') : ''))}`,
          ),
      ];
      // The overview and the messages came from the model: nothing of theirs drives the terminal.
      io.stdout.write(`${terminalText(mask(out.join('\n')))}\n`);
      return 0;
    }
    case 'rm': {
      if (!id) throw new UsageError('give the session id: workmem sessions rm <id>');
      const dir = await removeSession(id, { home, ...where });
      io.stdout.write(`Removed ${terminalLine(dir)}\n`);
      return 0;
    }
    case 'prune':
      if (id) throw new UsageError(`sessions prune takes no id, got ${JSON.stringify(id)}; it removes by age: --older-than <age>`);
      return prune(flags, io, home, where, mask);
    default:
      throw new UsageError(`unknown action ${JSON.stringify(action)}; use list, show <id>, rm <id> or prune --older-than <age>`);
  }
}

/** Units of --older-than: 90m, 12h, 30d, 2w. */
const AGE_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** --older-than as milliseconds. */
function ageOf(value: Flags[string]): number {
  const parsed = typeof value === 'string' ? /^(\d+)\s*([mhdw])$/.exec(value.trim()) : null;
  if (!parsed || Number(parsed[1]) === 0)
    throw new UsageError(`--older-than ${JSON.stringify(value ?? '')}: give an age such as 90m, 12h, 30d or 2w`);
  return Number(parsed[1]) * AGE_UNITS[parsed[2]!]!;
}

/**
 * `sessions prune --older-than <age> [--all] [--dry-run]`: removes the sessions (of this
 * directory, or of all) not updated for that long, as `rm` does each; one in use is kept and
 * said so. How a long-running proxy keeps its disk in check (docs/proxy.md).
 */
async function prune(
  flags: Flags,
  io: CliIO,
  home: string,
  where: { store?: SessionStore },
  mask: (text: string) => string,
): Promise<number> {
  const age = ageOf(flags['older-than']);
  const before = Date.now() - age;
  const old = (await listedSessions({ home, ...where, ...(flags.all ? {} : { cwd: io.cwd }) })).filter((s) => s.updatedAt < before);
  const dry = flags['dry-run'] === true;
  let removed = 0;
  for (const s of old) {
    const line = `${s.id.slice(0, 8)}  ${shownTime(s.updatedAt)}  ${terminalLine(mask(s.title))}`;
    if (dry) {
      io.stdout.write(`would remove ${line}\n`);
      continue;
    }
    try {
      await removeSession(s.id, { home, ...where });
      removed++;
      io.stdout.write(`removed ${line}\n`);
    } catch (error) {
      io.stdout.write(`kept    ${line}: ${terminalLine((error as Error).message.split('\n')[0]!)}\n`);
    }
  }
  const scope = flags.all ? '' : ` in ${terminalLine(io.cwd)}`;
  io.stdout.write(
    dry
      ? `${old.length} session${old.length === 1 ? '' : 's'}${scope} not updated since ${shownTime(before)} (--dry-run: none removed)\n`
      : `${removed} session${removed === 1 ? '' : 's'}${scope} not updated since ${shownTime(before)} removed${old.length > removed ? `, ${old.length - removed} kept` : ''}\n`,
  );
  return old.length > removed && !dry ? 1 : 0;
}

export async function memoryMain({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const home = typeof flags.home === 'string' ? flags.home : defaultHome(io.env);
  const [action, id, ...extra] = positionals;
  if (action !== 'show' || extra.length) throw new UsageError('usage: workmem memory show [<id>]');
  const store = storeOf(databaseOf(flags, io.env));
  const where = { home, ...(store ? { store } : {}) };
  try {
    let chosen = id;
    if (!chosen) {
      const newest = (await listSessions({ ...where, cwd: io.cwd }))[0];
      if (!newest) throw new UsageError(`no session in ${io.cwd}; give an id (workmem sessions list --all)`);
      chosen = newest.id;
    }
    const memory = await memoryOf(await readSession(chosen, where));
    io.stdout.write(`${terminalText(memory.content.trimEnd())}\n`);
    if (memory.detail.length)
      io.stdout.write(
        `\n--- detail/ ---\n${memory.detail.map((d) => `${terminalLine(d.path)}${d.heading ? `  ${terminalLine(d.heading)}` : ''}`).join('\n')}\n`,
      );
    return 0;
  } finally {
    await store?.close();
  }
}

/** What the model's files hold against the session write quota (a config.json that cannot be read leaves the quota unknown). */
function heldLine(entries: readonly LogEntry[], home: string, env: NodeJS.ProcessEnv): string {
  const held = new HeldWrites(heldFilesOf(entries), 0);
  let quota: string;
  try {
    const bytes = sessionWriteQuotaOf(home, env);
    quota = `${byteSize(bytes)} (${Math.floor((held.bytes / bytes) * 100)} %)`;
  } catch (error) {
    quota = `? (${(error as Error).message})`;
  }
  return `${byteSize(held.bytes)} held by the model's files (${held.count}), of the session write quota of ${quota}`;
}

/** Cells are one line each: a newline in a name cannot forge a row. */
function table(headers: string[], cells: string[][], caption?: string): string {
  const rows = cells.map((r) => r.map(terminalLine));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return `${caption ? `Sessions ${terminalLine(caption)}\n` : ''}${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

function oneLine(text: string): string {
  const flat = terminalLine(text).replace(/\s+/g, ' ').trim();
  return flat.length > 100 ? `${flat.slice(0, 99)}…` : flat;
}

/** A session's working memory as the model would be shown it, read without opening the session. */
function memoryOf(session: SessionReader): ReturnType<WorkingMemory['snapshot']> {
  return new WorkingMemory(readOnly(session.memory)).snapshot();
}

/** Reading methods passed through; a write (the template for a missing overview) refused: a reader writes nothing. */
function readOnly(files: MemoryReader): MemoryFiles {
  const refuse = (): never => {
    throw new UsageError(`${files.location} has no overview.md yet (shown without writing to the session)`);
  };
  return {
    location: files.location,
    read: (path, options) => files.read(path, options),
    list: (folder) => files.list(folder),
    exists: (path) => files.exists(path),
    stat: (path) => files.stat(path),
    write: async () => refuse(),
    append: async () => refuse(),
  };
}
