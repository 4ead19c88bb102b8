/**
 * One session's directory: the append-only log, meta.json and working-memory/. Keeps
 * the derived history view current as entries are appended. meta.json is a cache of
 * what the log says (counts, mode, memory writes): a corrupt one is set aside and
 * rebuilt from the log, and damaged log lines are reported in damage.json.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { DIR_MODE, TEMP_DIR, writeFileAtomic } from './atomicWrite.js';
import type { TrackerFacts } from '../memory/reminderTracker.js';
import type { Redact } from '../secrets/redact.js';

const noRedaction: Redact = (text) => text;
import { applyRepair, deriveHistory, viewAfterCompaction, type DerivedHistory } from '../history/deriveHistory.js';
import { appendItem, fromItems, type HistoryView } from '../history/historyView.js';
import {
  MessageLog,
  readLog,
  type CompactionEntry,
  type Damage,
  type LogEntry,
  type MessageEntry,
  type NewEntry,
  type RepairEntry,
} from './messageLog.js';
import type { ChatMessage } from '../history/messages.js';
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import { SESSION_FILES, sessionDir } from './sessionPaths.js';
import { SessionLock } from './sessionLock.js';
import { rebuildMeta, titleOf, trackerFactsOf } from '../history/sessionFacts.js';
import { SyncWorkingMemory as WorkingMemory } from '../memory/syncWorkingMemory.js';

import { describeRepair, firstLine, SessionMetaSchema, type Repair, type SessionMeta } from './sessionMeta.js';

export { describeRepair, SessionMetaSchema, type Repair, type SessionMeta };

export interface CreateOptions {
  /** Applied to every line and file written (API keys out; see redact.ts). */
  redact?: Redact;
  home: string;
  cwd: string;
  id?: string;
  name?: string | null;
  language?: MemoryLanguage;
  model?: string | null;
  now?: () => number;
}


const META_INTERVAL_MS = 1_000;

export class SessionFiles {
  private log: MessageLog;
  private view: HistoryView;
  private metaValue: SessionMeta;
  private lastTurnValue: number;
  private metaWritten: SessionMeta;
  private metaWrittenAt = 0;
  private metaDirty = false;
  /** What the log said about memory updates when the session was opened. */
  readonly trackerFacts: TrackerFacts;

  private constructor(
    readonly dir: string,
    meta: SessionMeta,
    derived: DerivedHistory,
    tornTail: boolean,
    readonly memory: WorkingMemory,
    /** What was wrong with the files when they were opened (empty when nothing was). */
    readonly damage: readonly string[],
    private readonly now: () => number,
    private readonly lock: SessionLock,
    readonly redact: Redact,
    entries: readonly LogEntry[] = [],
    private readonly report: { lines: Damage[]; repairs: Repair[] } = { lines: [], repairs: [] },
  ) {
    this.trackerFacts = trackerFactsOf(entries);
    this.view = derived.view;
    this.lastTurnValue = derived.lastTurn;
    this.metaValue = meta;
    this.metaWritten = meta;
    this.log = new MessageLog(join(dir, SESSION_FILES.messages), derived.lastSeq, tornTail, now, redact);
  }

  static create(options: CreateOptions): SessionFiles {
    const now = options.now ?? Date.now;
    const id = options.id ?? randomUUID();
    const dir = sessionDir(options.home, options.cwd, id);
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    chmodSync(dir, DIR_MODE);
    const lock = SessionLock.acquire(dir);
    return holding(lock, () => SessionFiles.createLocked(dir, id, options, now, lock, options.redact ?? noRedaction));
  }

  private static createLocked(
    dir: string,
    id: string,
    options: CreateOptions,
    now: () => number,
    lock: SessionLock,
    redact: Redact,
  ): SessionFiles {
    const language = options.language ?? 'en';
    const memory = new WorkingMemory(join(dir, SESSION_FILES.workingMemory), language, redact, join(dir, TEMP_DIR));
    memory.init();
    const t = now();
    const meta: SessionMeta = {
      format: 1,
      id,
      name: options.name ?? null,
      title: null,
      cwd: options.cwd,
      createdAt: t,
      updatedAt: t,
      messageCount: 0,
      turns: 0,
      historyMode: 'phase1',
      pinnedMode: null,
      memoryWrites: 0,
      calibration: 0,
      model: options.model ?? null,
      language,
    };
    writeFileAtomic(join(dir, SESSION_FILES.meta), redact(`${JSON.stringify(meta, null, 2)}\n`), { tmpDir: join(dir, TEMP_DIR) });
    return new SessionFiles(dir, meta, deriveHistory([]), false, memory, [], now, lock, redact);
  }

  /** Open an existing session, taking its lock (SessionInUseError if another process has it). */
  static open(dir: string, options: { now?: () => number; redact?: Redact; contextWindow?: number } = {}): SessionFiles {
    const now = options.now ?? Date.now;
    const lock = SessionLock.acquire(dir);
    return holding(lock, () => SessionFiles.openLocked(dir, now, lock, options.redact ?? noRedaction, options.contextWindow ?? Infinity));
  }

  private static openLocked(dir: string, now: () => number, lock: SessionLock, redact: Redact, contextWindow: number): SessionFiles {
    const loaded = readLog(join(dir, SESSION_FILES.messages));
    const derived = deriveHistory(loaded.entries);
    const damage: string[] = loaded.damage.map((d) => `messages.jsonl line ${d.line}: ${d.reason}`);
    damage.push(...derived.problems);

    const metaPath = join(dir, SESSION_FILES.meta);
    let meta: SessionMeta;
    try {
      meta = SessionMetaSchema.parse(JSON.parse(readFileSync(metaPath, 'utf8')));
    } catch (error) {
      const aside = `${metaPath}.corrupt-${now()}`;
      let note = `meta.json unreadable (${firstLine(error)}); rebuilt from messages.jsonl`;
      try {
        renameSync(metaPath, aside);
        note += `, the old file kept as ${aside.slice(dir.length + 1)}`;
      } catch {
        /* missing altogether */
      }
      damage.push(note);
      meta = rebuildMeta(dir, loaded.entries, derived.lastTurn, now());
      writeFileAtomic(metaPath, redact(`${JSON.stringify(meta, null, 2)}\n`), { tmpDir: join(dir, TEMP_DIR) });
    }
    // meta.json is a cache, never the authority: the directory names the session, and a
    // calibration no server could have caused (beyond the window) is rebuilt as the log would.
    const repairs: Repair[] = [];
    const id = basename(dir);
    if (meta.id !== id) {
      repairs.push({ what: `meta.json names session ${meta.id}`, where: 'meta.json id', done: `corrected to ${id}, the directory's name` });
      meta = { ...meta, id };
    }
    if (Math.abs(meta.calibration) > contextWindow) {
      repairs.push({
        what: `meta.json calibration ${meta.calibration} is beyond the ${contextWindow}-token window`,
        where: 'meta.json calibration',
        done: 'rebuilt from the log as 0; the next response calibrates it again',
      });
      meta = { ...meta, calibration: 0 };
    }
    damage.push(...repairs.map(describeRepair));
    if (loaded.damage.length || repairs.length) writeDamageReport(dir, { lines: loaded.damage, repairs }, now());
    // Counts written at most once a second may lag after a crash: the log says what they are.
    if (repairs.length || meta.messageCount !== derived.messageCount || meta.turns < derived.lastTurn) {
      meta = { ...meta, messageCount: derived.messageCount, turns: Math.max(meta.turns, derived.lastTurn), updatedAt: now() };
      writeFileAtomic(metaPath, redact(`${JSON.stringify(meta, null, 2)}\n`), { durable: false, tmpDir: join(dir, TEMP_DIR) });
    }
    // We hold the lock: temporary files are left from writes a crash interrupted.
    const leftovers = removeTempFiles(dir);
    if (leftovers)
      damage.push(`removed ${leftovers} temporary file(s) of writes interrupted by a crash (the files they were replacing are intact)`);
    const memory = new WorkingMemory(join(dir, SESSION_FILES.workingMemory), meta.language, redact, join(dir, TEMP_DIR));
    memory.init();
    return new SessionFiles(dir, meta, derived, loaded.tornTail, memory, damage, now, lock, redact, loaded.entries, {
      lines: loaded.damage,
      repairs,
    });
  }

  get id(): string {
    return this.metaValue.id;
  }
  get meta(): Readonly<SessionMeta> {
    return this.metaValue;
  }
  get history(): HistoryView {
    return this.view;
  }
  get lastTurn(): number {
    return this.lastTurnValue;
  }

  appendMessage(turn: number, message: ChatMessage, tokens: number, options: { sync: boolean; stop?: 'aborted' }): MessageEntry {
    const entry = this.log.append<Omit<MessageEntry, 'seq' | 'ts'>>(
      { type: 'message', turn, tokens, message, ...(options.stop ? { stop: options.stop } : {}) },
      { sync: options.sync },
    );
    this.view = appendItem(this.view, { seq: entry.seq, turn, message, tokens });
    this.lastTurnValue = Math.max(this.lastTurnValue, turn);
    this.metaValue = {
      ...this.metaValue,
      messageCount: this.metaValue.messageCount + 1,
      title: this.metaValue.title ?? (message.role === 'user' ? titleOf(message.content) : null),
    };
    return entry;
  }

  appendCompaction(entry: Omit<CompactionEntry, 'seq' | 'ts'>): CompactionEntry {
    const full = this.log.append(entry, { sync: true });
    this.view = viewAfterCompaction(this.view, full);
    return full;
  }

  /** Append a repair of the derived history (see RepairEntry). */
  appendRepair(entry: Omit<RepairEntry, 'seq' | 'ts'>): RepairEntry {
    const full = this.log.append<Omit<RepairEntry, 'seq' | 'ts'>>(entry, { sync: false });
    const items = applyRepair(this.view.items.slice(0, this.view.length), full);
    if (typeof items === 'string') throw new Error(`repair ${full.seq} cannot apply: ${items}`);
    this.view = fromItems(items);
    return full;
  }

  /** Add what a repair did to damage.json. */
  recordRepairs(repairs: readonly Repair[]): void {
    if (!repairs.length) return;
    this.report.repairs.push(...repairs);
    writeDamageReport(this.dir, this.report, this.now());
  }

  appendEvent(turn: number, name: string, data: Record<string, unknown>): void {
    this.log.append<NewEntry>({ type: 'event', turn, name, data }, { sync: false });
  }

  /**
   * meta.json is a cache of the log: replaced atomically, without an fsync of its own, and
   * at most once a second unless something other than the counts changed (open() heals
   * counts that lag after a crash). close() writes what is pending.
   */
  updateMeta(patch: Partial<SessionMeta>): void {
    const next = { ...this.metaValue, ...patch, updatedAt: this.now() };
    const significant = (['historyMode', 'pinnedMode', 'memoryWrites', 'name', 'title', 'model'] as const).some(
      (k) => next[k] !== this.metaWritten[k],
    );
    this.metaValue = next;
    if (significant || next.updatedAt - this.metaWrittenAt >= META_INTERVAL_MS) this.writeMeta();
    else this.metaDirty = true;
  }

  private writeMeta(): void {
    writeFileAtomic(join(this.dir, SESSION_FILES.meta), this.redact(`${JSON.stringify(this.metaValue, null, 2)}\n`), {
      durable: false,
      tmpDir: join(this.dir, TEMP_DIR),
    });
    this.metaWritten = this.metaValue;
    this.metaWrittenAt = this.metaValue.updatedAt;
    this.metaDirty = false;
  }

  sync(): void {
    this.log.sync();
  }

  close(): void {
    try {
      if (this.metaDirty) this.writeMeta();
      this.log.close();
    } finally {
      this.lock.release();
    }
  }
}

/** Run `open` holding `lock`; release it if opening fails. */
function holding<T>(lock: SessionLock, open: () => T): T {
  try {
    return open();
  } catch (error) {
    lock.release();
    throw error;
  }
}


/**
 * Temporary files of atomic writes a crash interrupted: only in the session's .tmp/,
 * where no name is the model's (a file it calls `.notes.1.deadbeef.tmp` is its own).
 */
function removeTempFiles(dir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(join(dir, TEMP_DIR));
  } catch {
    return 0; // no write has needed it yet
  }
  for (const name of names) {
    rmSync(join(dir, TEMP_DIR, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}



function writeDamageReport(dir: string, report: { lines: Damage[]; repairs: Repair[] }, now: number): void {
  const body = { checkedAt: now, lines: report.lines, ...(report.repairs.length ? { repairs: report.repairs } : {}) };
  writeFileAtomic(join(dir, SESSION_FILES.damage), `${JSON.stringify(body, null, 2)}\n`, {
    tmpDir: join(dir, TEMP_DIR),
  });
}


