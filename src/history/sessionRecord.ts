/**
 * One open session over any store (the storage port): the log and the derived history
 * view kept current as entries are appended, the meta as a cache of the log (rebuilt
 * when damaged, counts healed when they lag), the damage report, the tracker's facts and
 * the working memory, for every store.
 * Appends go one at a time, each naming the seq it expects, so none can interleave.
 */
import { randomUUID } from 'node:crypto';
import { heldFilesOf } from '../memory/heldWrites.js';
import type { TrackerFacts } from '../memory/reminderTracker.js';
import { WorkingMemory } from '../memory/workingMemory.js';
import type { BranchEntry, CompactionEntry, Damage, MessageEntry, NewEntry, RepairEntry } from '../storage/messageLog.js';
import { describeRepair, newSessionMeta, type Repair, type SessionMeta } from '../storage/sessionMeta.js';
import type { Redact, SessionStorage, SessionStore } from '../storage/sessionStore.js';
import { applyRepair, deriveHistory, viewAfterCompaction, type DerivedHistory } from './deriveHistory.js';
import { appendItem, fromItems, type HistoryView } from './historyView.js';
import { TOOL_NAMES_EVENT, type HostLine, type OwnToolNaming } from './hostLine.js';
import type { ChatMessage } from './messages.js';
import { rebuildMeta, titleFrom, trackerFactsOf } from './sessionFacts.js';
import { MetaCache } from './metaCache.js';
import type { RecordCreateOptions, RecordOpenOptions } from './recordOptions.js';

const noRedaction: Redact = (text) => text;

export type { RecordCreateOptions, RecordOpenOptions } from './recordOptions.js';

export class SessionRecord {
  private view: HistoryView;
  /** The messages of the current branch as a host holds them (hostLine.ts). */
  private line: HostLine;
  private lastTurnValue: number;
  private readonly metaCache: MetaCache;
  /** The append in progress: the next waits for it, so each names the seq that is really next. */
  private appending: Promise<unknown> = Promise.resolve();
  /** Work that will append when it is done (what an aborted request keeps): sync() and close() wait for it. */
  private readonly pending = new Set<Promise<unknown>>();
  readonly memory: WorkingMemory;

  private constructor(
    readonly storage: SessionStorage,
    meta: SessionMeta,
    derived: DerivedHistory,
    /** What the log said about memory updates when the session was opened. */
    readonly trackerFacts: TrackerFacts,
    /** What the model's writes held in working-memory when the session was opened, per file (heldWrites.ts). */
    readonly heldFiles: ReadonlyMap<string, number>,
    /** What was wrong when the session was opened (empty when nothing was). */
    readonly damage: readonly string[],
    private readonly report: { lines: Damage[]; repairs: Repair[] },
    private readonly now: () => number,
    readonly redact: Redact,
  ) {
    this.view = derived.view;
    this.line = derived.line;
    this.lastTurnValue = derived.lastTurn;
    this.metaCache = new MetaCache(storage, meta, now);
    this.memory = new WorkingMemory(storage.memory, meta.language, redact);
  }

  static async create(store: SessionStore, options: RecordCreateOptions): Promise<SessionRecord> {
    const now = options.now ?? Date.now;
    const redact = options.redact ?? noRedaction;
    const t = now();
    const meta = newSessionMeta({
      id: options.id ?? randomUUID(),
      cwd: options.cwd,
      at: t,
      name: options.name ?? null,
      model: options.model ?? null,
      language: options.language ?? 'en',
    });
    const storage = await store.create({ meta, redact, now });
    return closingOnError(storage, async () => {
      const record = new SessionRecord(
        storage,
        meta,
        deriveHistory([], redact),
        trackerFactsOf([]),
        new Map(),
        [],
        { lines: [], repairs: [] },
        now,
        redact,
      );
      await record.memory.init();
      return record;
    });
  }

  /** Open an existing session, taking its lease (SessionInUseError while another holds it). */
  static async open(store: SessionStore, id: string, options: RecordOpenOptions = {}): Promise<SessionRecord> {
    const now = options.now ?? Date.now;
    const redact = options.redact ?? noRedaction;
    const storage = await store.open(id, { redact, now });
    return closingOnError(storage, () => SessionRecord.opened(storage, now, redact, options.contextWindow ?? Infinity));
  }

  private static async opened(storage: SessionStorage, now: () => number, redact: Redact, contextWindow: number): Promise<SessionRecord> {
    const loaded = await storage.log.read();
    const derived = deriveHistory(loaded.entries, redact);
    const damage: string[] = loaded.damage.map((d) => `messages.jsonl line ${d.line}: ${d.reason}`);
    damage.push(...derived.problems);
    const stored = await storage.readMeta();
    let meta: SessionMeta;
    if (stored.ok) meta = stored.meta;
    else {
      damage.push(stored.problem);
      meta = rebuildMeta(storage.location, loaded.entries, derived.lastTurn, now(), storage.cwd);
      await storage.writeMeta(meta);
    }
    // The meta is a cache, never the authority: the store names the session, and a
    // calibration no server could have caused (beyond the window) is rebuilt as the log would.
    const repairs: Repair[] = [];
    if (meta.id !== storage.id) {
      repairs.push({
        what: `meta.json names session ${meta.id}`,
        where: 'meta.json id',
        done: `corrected to ${storage.id}, the directory's name`,
      });
      meta = { ...meta, id: storage.id };
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
    const report = { lines: loaded.damage, repairs };
    if (loaded.damage.length || repairs.length) await storage.writeDamage({ checkedAt: now(), ...report });
    // Counts written at most once a second may lag after a crash: the log says what they are.
    if (repairs.length || meta.messageCount !== derived.messageCount || meta.turns < derived.lastTurn) {
      meta = { ...meta, messageCount: derived.messageCount, turns: Math.max(meta.turns, derived.lastTurn), updatedAt: now() };
      await storage.writeMeta(meta, { durable: false });
    }
    damage.push(...storage.openNotes);
    const record = new SessionRecord(
      storage,
      meta,
      derived,
      trackerFactsOf(loaded.entries),
      heldFilesOf(loaded.entries),
      damage,
      report,
      now,
      redact,
    );
    await record.memory.init();
    return record;
  }

  get id(): string {
    return this.metaCache.value.id;
  }
  /** Where the session lives (its directory for the filesystem store). */
  get location(): string {
    return this.storage.location;
  }
  /** The same as location (a directory, for the filesystem store). */
  get dir(): string {
    return this.storage.location;
  }
  get meta(): Readonly<SessionMeta> {
    return this.metaCache.value;
  }
  get history(): HistoryView {
    return this.view;
  }
  get lastTurn(): number {
    return this.lastTurnValue;
  }
  /** The messages of the current branch as a host holds them: what a host's loop holds is matched against. */
  get hostLine(): HostLine {
    return this.line;
  }

  async appendMessage(
    turn: number,
    message: ChatMessage,
    tokens: number,
    options: { sync: boolean; stop?: 'aborted'; pinned?: boolean; print?: string },
  ): Promise<MessageEntry> {
    const [entry] = await this.appendMessages(
      [{ turn, message, tokens, pinned: options.pinned === true, ...(options.print !== undefined ? { print: options.print } : {}) }],
      options,
    );
    return entry!;
  }

  /**
   * Messages appended together, in order (a host's conversation taken in): one write and,
   * with `sync`, one sync where the store can (SessionLog.appendAll). `print`: a tool result's
   * fingerprint as the host sent it, kept beside its capped copy.
   */
  async appendMessages(
    messages: readonly { turn: number; message: ChatMessage; tokens: number; pinned?: boolean; print?: string }[],
    options: { sync: boolean; stop?: 'aborted' },
  ): Promise<MessageEntry[]> {
    const entries = messages.map(({ turn, message, tokens, pinned, print }) => {
      if (pinned && message.role !== 'user')
        throw new TypeError(`only a user message can be pinned (a ${message.role} message was marked pinned)`);
      const flags = {
        ...(options.stop ? { stop: options.stop } : {}),
        ...(pinned ? { pinned: true as const } : {}),
        ...(print !== undefined ? { print } : {}),
      };
      return { type: 'message' as const, turn, tokens, message, ...flags };
    });
    if (this.storage.log.appendAll || entries.length === 1) return this.took(await this.appendAll(entries, options.sync));
    // A store that takes one entry at a time: each in the history as soon as it is written.
    const written: MessageEntry[] = [];
    for (const [i, entry] of entries.entries())
      written.push(...this.took(await this.appendAll([entry], options.sync && i === entries.length - 1)));
    return written;
  }

  /** Appended messages taken into the view, the host's line and the meta's counts. */
  private took(entries: MessageEntry[]): MessageEntry[] {
    const meta = this.metaCache.value;
    let title = meta.title;
    for (const { seq, turn, message, tokens, pinned, print } of entries) {
      this.view = appendItem(this.view, { seq, turn, message, tokens, ...(pinned ? { pinned } : {}) });
      this.line.add(message, seq, print);
      this.lastTurnValue = Math.max(this.lastTurnValue, turn);
      title ??= titleFrom(turn, message, pinned === true);
    }
    this.metaCache.counted({ ...meta, messageCount: meta.messageCount + entries.length, title });
    return entries;
  }

  /**
   * A compaction: its archive written into working-memory/ (`archive.path`, relative to it)
   * and its entry appended as one unit (SessionStorage.commit), durably.
   */
  async appendCompaction(
    entry: Omit<CompactionEntry, 'seq' | 'ts'>,
    archive: { path: string; content: string; append: boolean },
  ): Promise<CompactionEntry> {
    const path = await this.memory.relOf(archive.path);
    const log = this.storage.log;
    const write = { path, content: this.redact(archive.content), append: archive.append };
    const next = this.appending.catch(() => {}).then(() => this.storage.commit([write], entry, { expectedSeq: log.nextSeq }));
    this.appending = next;
    const full = await next;
    this.memory.changed(path);
    this.view = viewAfterCompaction(this.view, full);
    return full;
  }

  /** Append a repair of the derived history (see RepairEntry). */
  async appendRepair(entry: Omit<RepairEntry, 'seq' | 'ts'>): Promise<RepairEntry> {
    const full = await this.append<Omit<RepairEntry, 'seq' | 'ts'>>(entry, false);
    const items = applyRepair(this.view.items.slice(0, this.view.length), full);
    if (typeof items === 'string') throw new Error(`repair ${full.seq} cannot apply: ${items}`);
    this.view = fromItems(items);
    return full;
  }

  /**
   * Append a branch (see BranchEntry) and derive the history again from the log, as opening
   * would: a branch is rare, and what it undoes (compactions past its point) is in the log.
   */
  async appendBranch(entry: Omit<BranchEntry, 'seq' | 'ts'>): Promise<BranchEntry> {
    const full = await this.append<Omit<BranchEntry, 'seq' | 'ts'>>(entry, true);
    const derived = deriveHistory((await this.storage.log.read()).entries, this.redact);
    this.view = derived.view;
    this.line = derived.line;
    return full;
  }

  /** Add what a repair did to the damage report. */
  async recordRepairs(repairs: readonly Repair[]): Promise<void> {
    if (!repairs.length) return;
    this.report.repairs.push(...repairs);
    await this.storage.writeDamage({ checkedAt: this.now(), ...this.report });
  }

  async appendEvent(turn: number, name: string, data: Record<string, unknown>): Promise<void> {
    await this.append<NewEntry>({ type: 'event', turn, name, data }, false);
  }

  /** workmem's tools are sent under other names from here on (toolNaming.ts): recorded, so that the log's calls are told apart as they were. */
  async nameTools(turn: number, naming: OwnToolNaming): Promise<void> {
    await this.appendEvent(turn, TOOL_NAMES_EVENT, { prefix: naming.prefix, own: [...naming.own] });
    this.line.naming = naming;
  }

  /** The meta is a cache of the log (metaCache.ts): counts written behind the turn, other changes at once. */
  updateMeta(patch: Partial<SessionMeta>): Promise<void> {
    return this.metaCache.update(patch);
  }

  /** Wait for `work` (which appends when it is done) in sync() and close(). */
  track(work: Promise<unknown>): void {
    const settled: Promise<unknown> = work.catch(() => {}).finally(() => this.pending.delete(settled));
    this.pending.add(settled);
  }

  /** Every append made so far is durable (tracked work and appends started on abort included) when this resolves. */
  async sync(): Promise<void> {
    await this.settle();
    await this.storage.log.sync();
  }

  private async settle(): Promise<void> {
    while (this.pending.size) await Promise.all(this.pending);
    await this.appending.catch(() => {});
  }

  async close(): Promise<void> {
    try {
      await this.settle();
      // Counts change with every append without a write of their own: a clean close leaves them current.
      await this.metaCache.flush();
    } finally {
      await this.storage.close();
    }
  }

  /** Append after the append in progress, naming the seq that is next. */
  private append<E extends NewEntry>(entry: E, sync: boolean): Promise<E & { seq: number; ts: number }> {
    return this.appendAll([entry], sync).then((written) => written[0]!);
  }

  /** Entries appended together after the append in progress (one, where the store has no appendAll). */
  private appendAll<E extends NewEntry>(entries: readonly E[], sync: boolean): Promise<(E & { seq: number; ts: number })[]> {
    const log = this.storage.log;
    const one = async () => [await log.append(entries[0]!, { expectedSeq: log.nextSeq, sync })];
    const next = this.appending
      .catch(() => {})
      .then(() => (log.appendAll ? log.appendAll(entries, { expectedSeq: log.nextSeq, sync }) : one()));
    this.appending = next;
    return next;
  }
}

/** Run `open` on a storage just opened; close it (releasing its lease) if opening fails. */
async function closingOnError<T>(storage: SessionStorage, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    await storage.close().catch(() => {});
    throw error;
  }
}
