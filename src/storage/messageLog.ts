/**
 * messages.jsonl: the append-only log of a session. Every message carries its token
 * count; compaction entries say which earlier items they replace; events record mode
 * changes and memory updates. Lines are never rewritten. A damaged line (corrupt JSON,
 * a torn last line after a crash) is reported and skipped; the rest loads.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { CompactionReason } from '../events.js';
import type { ChatMessage, ToolMessage } from '../history/messages.js';
import { yieldIfBusy } from '../runtime/fairYield.js';

export interface MessageEntry {
  type: 'message';
  seq: number;
  ts: number;
  turn: number;
  tokens: number;
  message: ChatMessage;
  /** The message was cut short by an abort. */
  stop?: 'aborted';
  /** A user message the host pinned (the task, rules): no compaction ever replaces it. */
  pinned?: true;
  /** A host's tool result: the fingerprint of its text as the host sent it (the message keeps it capped), to know the host's copy by. */
  print?: string;
}

export interface CompactionEntry {
  type: 'compaction';
  seq: number;
  ts: number;
  turn: number;
  reason: CompactionReason;
  target: 'conversation' | 'tools' | 'all';
  strategy: 'archive' | 'summarize';
  /**
   * Items from `from` to `to` (seqs, in derived order, inclusive) are replaced by `note`,
   * except the pinned ones named in `kept`, which stay, in order, right after the note.
   */
  replaces?: { from: number; to: number; count: number; kept?: number[] };
  note?: { message: ChatMessage; tokens: number };
  /** Single items whose content is replaced (tool outputs stubbed). */
  stubs?: { seq: number; content: string; tokens: number }[];
  files: string[];
  tokensBefore: number;
  tokensAfter: number;
}

export interface EventEntry {
  type: 'event';
  seq: number;
  ts: number;
  turn: number;
  name: string;
  data: Record<string, unknown>;
}

/**
 * A repair of the derived history, appended when opening finds calls and results that do
 * not pair (a damaged or reordered line): `answer` places a result right after the item
 * `after`; `setAside` takes an orphan result out. The lines they mend stay as they are.
 */
export interface RepairEntry {
  type: 'repair';
  seq: number;
  ts: number;
  turn: number;
  answer?: { after: number; message: ToolMessage; tokens: number };
  setAside?: number;
}

/**
 * A host's conversation departed from the log (it edited or regenerated a message, or
 * compacted its own history): the messages after `after` (a message's seq; 0: all of
 * them) leave the derived history, and the host's own messages that follow are appended
 * after this entry. Nothing is removed from the log; workmem's compactions of messages the
 * branch keeps stay, those that reached past it are undone (deriveHistory.ts).
 */
export interface BranchEntry {
  type: 'branch';
  seq: number;
  ts: number;
  turn: number;
  after: number;
  /** How many of the log's messages it leaves behind. */
  dropped: number;
  /** 'compacted': the host replaced earlier messages and kept its recent ones (hostLine.ts says how this is told). */
  reason: 'edited' | 'compacted';
}

export type LogEntry = MessageEntry | CompactionEntry | EventEntry | RepairEntry | BranchEntry;
export type NewEntry = DistributiveOmit<LogEntry, 'seq' | 'ts'>;
type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;

export interface Damage {
  line: number;
  offset: number;
  reason: string;
  /** The damaged line as it is in the file, kept in damage.json. */
  raw: string;
}

export interface LoadedLog {
  entries: LogEntry[];
  damage: Damage[];
  /** The file did not end with a newline (a torn last write). */
  tornTail: boolean;
}

export function readLog(path: string): LoadedLog {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], damage: [], tornTail: false };
    throw error;
  }
  const parser = new LogParser(text);
  while (!parser.step(Infinity));
  return parser.loaded;
}

/** readLog without holding the event loop: read off it, parsed a slice at a time (a long log is tens of ms of JSON.parse). */
export async function readLogFile(path: string): Promise<LoadedLog> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], damage: [], tornTail: false };
    throw error;
  }
  const parser = new LogParser(text);
  while (!parser.step(PARSED_PER_SLICE)) await yieldIfBusy();
  return parser.loaded;
}

/** Lines parsed between two looks at the loop (a line is a few µs). */
const PARSED_PER_SLICE = 200;

class LogParser {
  readonly loaded: LoadedLog;
  private offset = 0;
  private line = 0;

  constructor(private readonly text: string) {
    this.loaded = { entries: [], damage: [], tornTail: text.length > 0 && !text.endsWith('\n') };
  }

  /** Parse up to `lines` more lines; true when the text is done. */
  step(lines: number): boolean {
    const { text, loaded } = this;
    for (let n = 0; n < lines && this.offset < text.length; n++) {
      this.line++;
      let end = text.indexOf('\n', this.offset);
      if (end < 0) end = text.length;
      const raw = text.slice(this.offset, end);
      if (raw.trim().length > 0) {
        const isLast = end === text.length;
        const reason = parseLine(raw, loaded.entries);
        if (reason) {
          const torn = isLast && loaded.tornTail;
          loaded.damage.push({ line: this.line, offset: this.offset, reason: torn ? `truncated last line (${reason})` : reason, raw });
        }
      }
      this.offset = end + 1;
    }
    return this.offset >= text.length;
  }
}

function parseLine(raw: string, into: LogEntry[]): string | null {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return `not JSON: ${(error as Error).message}`;
  }
  const problem = checkEntry(value);
  if (problem) return problem;
  into.push(value as LogEntry);
  return null;
}

const isInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

/** A quick structural check: fast enough for 100k lines on resume (zod is ~10x slower here). */
export function checkEntry(value: unknown): string | null {
  if (!value || typeof value !== 'object') return 'not an object';
  const e = value as Record<string, unknown>;
  if (!isInt(e.seq) || typeof e.ts !== 'number' || !isInt(e.turn)) return 'missing seq, ts or turn';
  switch (e.type) {
    case 'message':
      if (!isInt(e.tokens)) return 'message without a token count';
      if (e.pinned !== undefined && (e.pinned !== true || (e.message as { role?: unknown } | undefined)?.role !== 'user'))
        return 'pinned entry that is not a user message';
      return checkMessage(e.message);
    case 'compaction': {
      const r = e.replaces as Record<string, unknown> | undefined;
      if (r !== undefined && (!isInt(r.from) || !isInt(r.to) || !isInt(r.count))) return 'compaction with a malformed range';
      if (r?.kept !== undefined && !(Array.isArray(r.kept) && r.kept.every(isInt))) return 'compaction with malformed kept items';
      if (e.note !== undefined) {
        const note = e.note as Record<string, unknown>;
        if (!isInt(note.tokens)) return 'compaction note without a token count';
        const problem = checkMessage(note.message);
        if (problem) return problem;
      }
      if (
        e.stubs !== undefined &&
        !(Array.isArray(e.stubs) && e.stubs.every((s) => isInt(s?.seq) && typeof s?.content === 'string' && isInt(s?.tokens)))
      ) {
        return 'compaction with malformed stubs';
      }
      return Array.isArray(e.files) ? null : 'compaction without files';
    }
    case 'event':
      return typeof e.name === 'string' && !!e.data && typeof e.data === 'object' ? null : 'malformed event';
    case 'repair': {
      if (e.setAside !== undefined) return isInt(e.setAside) ? null : 'repair with a malformed seq';
      const answer = e.answer as Record<string, unknown> | undefined;
      if (!answer || !isInt(answer.after) || !isInt(answer.tokens)) return 'repair without an answer or a seq';
      return (answer.message as { role?: unknown } | undefined)?.role === 'tool'
        ? checkMessage(answer.message)
        : 'repair answer is not a tool result';
    }
    case 'branch':
      return isInt(e.after) && isInt(e.dropped) && (e.reason === 'edited' || e.reason === 'compacted') ? null : 'malformed branch';
    default:
      return `unknown entry type ${JSON.stringify(e.type)}`;
  }
}

function checkMessage(value: unknown): string | null {
  if (!value || typeof value !== 'object') return 'message is not an object';
  const m = value as Record<string, unknown>;
  switch (m.role) {
    case 'system':
    case 'user':
      return typeof m.content === 'string' ? null : `${m.role} message without text`;
    case 'assistant':
      if (m.content !== null && typeof m.content !== 'string') return 'assistant content is neither text nor null';
      if (m.tool_calls === undefined) return null;
      return Array.isArray(m.tool_calls) &&
        m.tool_calls.every(
          (c) =>
            typeof c?.id === 'string' &&
            c.type === 'function' &&
            typeof c.function?.name === 'string' &&
            typeof c.function?.arguments === 'string',
        )
        ? null
        : 'malformed tool_calls';
    case 'tool':
      return typeof m.content === 'string' && typeof m.tool_call_id === 'string' ? null : 'malformed tool result';
    default:
      return `unknown role ${JSON.stringify(m.role)}`;
  }
}
