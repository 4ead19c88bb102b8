/**
 * The public session API: createSession / openSession, prompt, abort, events. Wires the
 * machines to their actors (files, the model, tools, the compactor) and keeps the
 * reminder tracker in the state store.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createActor, fromPromise, type Actor, type InspectionEvent } from 'xstate';
import type Keyv from 'keyv';
import {
  childTurn,
  sessionMachine,
  type AcceptInput,
  type AcceptOutput,
  type SaveInput,
  type SaveOutput,
} from '../../machines/sessionMachine.js';
import type {
  CompactorInput,
  CompactorOutput,
  LlmInput,
  LlmOutput,
  MemoryStoreInput,
  ToolRunnerInput,
  ToolRunnerOutput,
  TurnStatics,
} from '../../machines/turnMachine.js';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { MemorySnapshot } from '../memory/workingMemory.js';
import { compactHistoryTool } from '../compaction/compactHistoryTool.js';
import { compact, type CompactionDeps, type CompactionResult } from '../compaction/compact.js';
import { compactionStoreOf } from '../compaction/store.js';
import type { CompactionStrategy, CompactionTarget } from '../compaction/plan.js';
import { runCompactor } from '../actors/compactor.js';
import { ConfigError, resolveSettings, type SettingsOverrides } from '../settings/config.js';
import type { SessionEvent, TurnStatus, WorkmemEvent } from '../events.js';
import { totalTokens, type HistoryMode, type HistoryView } from '../history/historyView.js';
import type { LLM, TurnError } from '../llm/llm.js';
import { runLlmRequest } from '../actors/llmRequest.js';
import { memoryTools } from '../tools/memoryTools.js';
import { INITIAL_TRACKER, parseTrackerState, reconcileTracker, type TrackerState } from '../memory/reminderTracker.js';
import { SessionFiles } from '../storage/sessionFiles.js';
import { defaultHome, SESSION_FILES, SESSION_ID, sessionsRoot, stateStorePath } from '../storage/sessionPaths.js';
import { openStateStore, type StateStore } from '../storage/stateStore.js';
import { systemPrompt } from '../prompt/systemPrompt.js';
import { loadTokenCounter, type TokenCounter } from '../tokens/tokens.js';
import type { Tool } from '../tools/tool.js';
import { runToolCalls } from '../actors/toolRunner.js';
import { TraceRecorder } from '../viz/traceRecorder.js';
import { LiveLink, liveUrl } from '../viz/liveLink.js';
import { NOTE_PREFIX } from '../compaction/plan.js';
import type { ItemMemory } from '../itemMemory/itemMemory.js';
import { openItemMemory, type PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { itemMemoryTools } from '../itemMemory/itemMemoryTools.js';
import { modelSummarizer } from '../compaction/summarizer.js';
import { SessionLock } from '../storage/sessionLock.js';
import { redactor, type Redact } from '../secrets/redact.js';
import { checkSessionOptions } from './sessionOptionsCheck.js';
import { answerInterruptedCalls, repairPairing } from '../history/crashRecovery.js';
import { capOutput, SavedOutputNames } from '../tools/toolOutputCap.js';
import { promptProblem } from '../llm/captureBounds.js';
import { TOOL_OUTPUTS_DIR } from '../memory/workingMemory.js';
import type { WriteResult } from '../memory/workingMemory.js';

export interface SessionOptions {
  llm: LLM;
  /** Root of all workmem data; default $WORKMEM_HOME or ~/.workmem. */
  home?: string;
  /** The working directory the session belongs to; default process.cwd(). */
  cwd?: string;
  name?: string;
  /** The host's own system instructions, placed before workmem's. */
  instructions?: string;
  /** Host tools, in addition to read / write / edit. */
  tools?: readonly Tool[];
  settings?: SettingsOverrides;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** Receives XState inspection events of the session and its turns. */
  inspect?: (event: InspectionEvent) => void;
  /** Item memory (seed 001): remember / recall / forget, optionally injected after overview.md. */
  itemMemory?: ItemMemoryConfig;
  /** Write trace.jsonl for the visualizer (default true). */
  trace?: boolean;
  /** Stream the trace live to `workmem viz`: true (127.0.0.1:4900), a port or a ws:// URL. */
  visualizer?: true | number | string;
  /** Where warnings go (an unreachable visualizer); default: none. */
  warn?: (message: string) => void;
  /**
   * Values to keep out of everything the session writes or reports, besides the model's
   * own (`llm.secrets`) and $OPENAI_API_KEY: replaced by "[redacted]".
   */
  secrets?: readonly string[];
  /** Draws in [0, 1) for the retry jitter (default Math.random); inject one for reproducible tests. */
  random?: () => number;
  /**
   * Where the session index, tracker state and item memory go: any keyv instance (its
   * adapter must support `keyv.iterator`); default files under `<home>/state/`.
   */
  stateStore?: Keyv;
}

export interface ItemMemoryConfig {
  /** 'session' (default): items belong to this session; 'user': shared by a user's sessions. */
  scope?: 'session' | 'user';
  userId?: string;
  maxCapacity?: number;
  maxTokens?: number;
  maxAgeMinutes?: number;
  decayFactor?: number;
  /** Inject the items most relevant to the latest user message after overview.md. */
  inject?: { limit?: number; maxTokens?: number };
}

export type OpenOptions = Omit<SessionOptions, 'cwd' | 'name'>;

export interface TurnResult {
  promptId: string;
  turn: number | null;
  status: TurnStatus;
  text: string;
  requests: number;
  error?: TurnError;
}

export interface SessionState {
  id: string;
  dir: string;
  mode: HistoryMode;
  pinned: HistoryMode | null;
  turn: number;
  running: boolean;
  queued: number;
  tracker: TrackerState;
  /** Token figures of the last request built, if any. */
  lastPrompt: Extract<SessionEvent, { type: 'prompt_built' }>['tokens'] | null;
}

type Listener = (event: WorkmemEvent) => void;
const TRACKER_KEY = (id: string): string => `tracker:${id}`;
const INDEX_KEY = (id: string): string => `session:${id}`;

export interface SessionIndexEntry {
  id: string;
  dir: string;
  cwd: string;
  createdAt: number;
  name: string | null;
}

export async function createSession(options: SessionOptions): Promise<Session> {
  checkSessionOptions(options, 'createSession');
  const env = options.env ?? process.env;
  const home = options.home ?? defaultHome(env);
  const resolved = resolveSettings(options.llm, options.settings, env);
  const counter = await loadTokenCounter(options.llm.model);
  const store = await openStateStore(stateStorePath(home), options.stateStore);
  let files: SessionFiles | undefined;
  try {
    files = SessionFiles.create({
      redact: sessionRedactor(options, env),
      home,
      cwd: options.cwd ?? process.cwd(),
      name: options.name ?? null,
      language: resolved.turn.language,
      model: options.llm.model,
      ...(options.now ? { now: options.now } : {}),
    });
    const entry: SessionIndexEntry = {
      id: files.id,
      dir: files.dir,
      cwd: files.meta.cwd,
      createdAt: files.meta.createdAt,
      name: files.meta.name === null ? null : files.redact(files.meta.name), // as meta.json has it: masked
    };
    await store.set(INDEX_KEY(files.id), entry);
    if (resolved.pinned) files.updateMeta({ historyMode: resolved.pinned, pinnedMode: resolved.pinned });
    const items = await openItems(store, files.id, options, counter);
    return new Session(files, store, counter, options, resolved, INITIAL_TRACKER, [], items, false);
  } catch (error) {
    files?.close();
    await store.close();
    throw error;
  }
}

export async function openSession(id: string, options: OpenOptions): Promise<Session> {
  checkSessionOptions(options, 'openSession');
  const env = options.env ?? process.env;
  const home = options.home ?? defaultHome(env);
  const resolved = resolveSettings(options.llm, options.settings, env);
  const counter = await loadTokenCounter(options.llm.model);
  const store = await openStateStore(stateStorePath(home), options.stateStore);
  let files: SessionFiles | undefined;
  try {
    const dir = await findSessionDir(store, home, id);
    files = SessionFiles.open(dir, {
      redact: sessionRedactor(options, env),
      contextWindow: resolved.turn.contextWindow,
      ...(options.now ? { now: options.now } : {}),
    });
    const damage = [...files.damage];
    const stored = await store.get<unknown>(TRACKER_KEY(files.id));
    let tracker = parseTrackerState(stored);
    if (!tracker) {
      if (stored !== undefined) damage.push('reminder tracker state was malformed; started afresh');
      tracker = INITIAL_TRACKER;
    }
    tracker = reconcileTracker(tracker, files.trackerFacts);
    damage.push(...repairPairing(files, counter)); // calls and results paired again, wherever a line was lost
    const items = await openItems(store, files.id, options, counter);
    return new Session(files, store, counter, options, resolved, tracker, damage, items, true);
  } catch (error) {
    files?.close();
    await store.close();
    throw error;
  }
}

/**
 * The event with secrets masked in what servers, tools and the model said: error
 * messages, text, tool arguments and outputs. (A key split across text deltas is caught
 * before this, by the llm actor's stream window: see streamRedactor.)
 */
function redactEvent(event: SessionEvent, redact: Redact): SessionEvent {
  switch (event.type) {
    case 'message_delta':
      return { ...event, delta: redact(event.delta) };
    case 'message_end':
      return { ...event, message: redactMessage(event.message, redact) };
    case 'tool_start':
      return { ...event, callId: redact(event.callId), name: redact(event.name), arguments: redact(event.arguments) };
    case 'tool_end':
      return { ...event, callId: redact(event.callId), name: redact(event.name), content: redact(event.content) };
    case 'turn_end':
      return {
        ...event,
        text: redact(event.text),
        ...(event.error ? { error: { ...event.error, message: redact(event.error.message) } } : {}),
      };
    case 'turn_start':
    case 'prompt_dropped':
      return { ...event, text: redact(event.text) };
    case 'retry':
    case 'error':
      return { ...event, error: { ...event.error, message: redact(event.error.message) } };
    default:
      return event;
  }
}

/** The message with secrets masked in its text, tool names, call ids and arguments; the same object when there are none. */
function redactMessage(message: ChatMessage, redact: Redact): ChatMessage {
  const content = typeof message.content === 'string' ? redact(message.content) : message.content;
  const calls = message.role === 'assistant' ? message.tool_calls : undefined;
  const cleanCalls = calls?.map((c) => {
    const [id, name, args] = [redact(c.id), redact(c.function.name), redact(c.function.arguments)];
    return id === c.id && name === c.function.name && args === c.function.arguments
      ? c
      : { ...c, id, function: { ...c.function, name, arguments: args } };
  });
  const callId = message.role === 'tool' ? redact(message.tool_call_id) : undefined;
  if (
    content === message.content &&
    (!calls || cleanCalls!.every((c, i) => c === calls[i])) &&
    (message.role !== 'tool' || callId === message.tool_call_id)
  )
    return message;
  return {
    ...message,
    content,
    ...(cleanCalls ? { tool_calls: cleanCalls } : {}),
    ...(callId ? { tool_call_id: callId } : {}),
  } as ChatMessage;
}

/** Sessions in the index and any on disk it misses, newest first; `cwd` limits them to one directory. */
export function listSessions(options: StoreOptions & { cwd?: string } = {}): Promise<SessionIndexEntry[]> {
  return withStore(options, async (store, home) => {
    const entries = (await store.entries<SessionIndexEntry>('session:')).map(([, e]) => e);
    entries.push(...sessionsOnDisk(home, new Set(entries.map((e) => e.id)))); // not in the index: an index from an earlier version, or a lost one
    return entries.filter((e) => !options.cwd || e.cwd === options.cwd).sort((a, b) => b.createdAt - a.createdAt);
  });
}

type StoreOptions = { home?: string; env?: NodeJS.ProcessEnv; stateStore?: Keyv };

async function withStore<T>(
  options: StoreOptions,
  run: (store: StateStore, home: string) => Promise<T>,
): Promise<T> {
  const home = options.home ?? defaultHome(options.env ?? process.env);
  const store = await openStateStore(stateStorePath(home), options.stateStore);
  try {
    return await run(store, home);
  } finally {
    await store.close();
  }
}

/** Where a session lives (an id or a unique prefix), without opening it. */
export function findSession(id: string, options: StoreOptions = {}): Promise<string> {
  return withStore(options, (store, home) => findSessionDir(store, home, id));
}

/** Delete a session: its directory and everything the store holds for it. */
export function removeSession(id: string, options: StoreOptions = {}): Promise<string> {
  return withStore(options, async (store, home) => {
    const dir = await findSessionDir(store, home, id);
    const fullId = dir.split(/[/\\]/).pop()!;
    const lock = SessionLock.acquire(dir); // refuses a session in use
    rmSync(dir, { recursive: true, force: true });
    lock.release();
    await store.delete(INDEX_KEY(fullId));
    await store.delete(TRACKER_KEY(fullId));
    for (const [key] of await store.entries(`items:session:${fullId}:`)) await store.delete(key);
    return dir;
  });
}

async function openItems(
  store: StateStore,
  sessionId: string,
  options: OpenOptions,
  counter: TokenCounter,
): Promise<PersistentItemMemory | null> {
  const config = options.itemMemory;
  if (!config) return null;
  if (config.scope === 'user' && !config.userId) throw new ConfigError('itemMemory: scope "user" needs a userId');
  const scope = config.scope === 'user' ? `user:${config.userId}` : `session:${sessionId}`;
  const { inject: _inject, scope: _scope, userId: _user, ...limits } = config;
  return openItemMemory(store, scope, { ...limits, countTokens: (t) => counter.text(t), ...(options.now ? { now: options.now } : {}) });
}

/** Sessions in the folders under `home` whose ids are not in `known`, as their meta.json describes them. */
function sessionsOnDisk(home: string, known: ReadonlySet<string>): SessionIndexEntry[] {
  const root = sessionsRoot(home);
  const found: SessionIndexEntry[] = [];
  for (const cwdDir of safeReaddir(root)) {
    for (const id of safeReaddir(join(root, cwdDir))) {
      if (!SESSION_ID.test(id) || known.has(id)) continue;
      const dir = join(root, cwdDir, id);
      try {
        const meta = JSON.parse(readFileSync(join(dir, SESSION_FILES.meta), 'utf8')) as Partial<SessionIndexEntry>;
        if (meta.id !== id || typeof meta.cwd !== 'string' || typeof meta.createdAt !== 'number') continue;
        found.push({ id, dir, cwd: meta.cwd, createdAt: meta.createdAt, name: typeof meta.name === 'string' ? meta.name : null });
      } catch {
        // no readable meta.json: not listed (openSession can still rebuild it)
      }
    }
  }
  return found;
}

async function findSessionDir(store: StateStore, home: string, id: string): Promise<string> {
  if (typeof id !== 'string' || !/^[0-9a-f-]{4,36}$/i.test(id)) {
    throw new ConfigError(`${JSON.stringify(id)} is not a session id (a UUID, or at least its first 4 characters)`);
  }
  const exact = await store.get<SessionIndexEntry>(INDEX_KEY(id));
  if (exact && isDir(exact.dir)) return exact.dir;
  const indexed = (await store.entries<SessionIndexEntry>(`session:${id}`)).map(([, e]) => e).filter((e) => isDir(e.dir));
  if (indexed.length === 1) return indexed[0]!.dir;
  if (indexed.length > 1) throw new ConfigError(`session id ${id} is ambiguous: ${indexed.map((e) => e.id).join(', ')}`);
  // Not in the index (an index from another machine, or a lost one): look on disk.
  const root = sessionsRoot(home);
  const found: string[] = [];
  for (const cwdDir of safeReaddir(root)) {
    for (const name of safeReaddir(join(root, cwdDir))) {
      if (SESSION_ID.test(name) && name.startsWith(id.toLowerCase())) found.push(join(root, cwdDir, name));
    }
  }
  if (found.length === 1) return found[0]!;
  if (found.length > 1) throw new ConfigError(`session id ${id} is ambiguous: ${found.length} sessions start with it`);
  throw new ConfigError(`no session with id ${id} under ${root}`);
}

export class Session {
  readonly id: string;
  readonly dir: string;
  /** Problems found when the session was opened (damaged lines, a rebuilt meta.json). */
  readonly damage: readonly string[];
  readonly tools: readonly Tool[];
  private readonly actor: Actor<typeof sessionMachine>;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly pending = new Map<string, (result: TurnResult) => void>();
  private readonly writes: WriteResult[] = [];
  private readonly trackerWriter: TrackerWriter;
  private readonly now: () => number;
  private compacted = false;
  private readonly trace: TraceRecorder | null;
  private live: LiveLink | null = null;
  private compaction!: CompactionDeps;
  /** The model's name and the window the session works with. */
  model!: { name: string; contextWindow: number };
  private closed = false;
  private lastPrompt: SessionState['lastPrompt'] = null;
  private readonly redact: Redact;

  constructor(
    readonly files: SessionFiles,
    private readonly store: StateStore,
    readonly counter: TokenCounter,
    options: OpenOptions,
    resolved: ReturnType<typeof resolveSettings>,
    tracker: TrackerState,
    damage: string[],
    private readonly items: PersistentItemMemory | null = null,
    resumed = false,
  ) {
    this.id = files.id;
    this.dir = files.dir;
    this.damage = damage;
    this.now = options.now ?? Date.now;
    this.redact = files.redact;
    this.trackerWriter = new TrackerWriter(store, TRACKER_KEY(files.id));
    this.trace =
      options.trace === false ? null : new TraceRecorder(join(files.dir, 'trace.jsonl'), files.id, resumed, this.now, this.redact);
    if (this.trace && options.visualizer) {
      const home = options.home ?? defaultHome(options.env ?? process.env); // where the viz token is
      const link = new LiveLink(liveUrl(options.visualizer), files.id, options.warn, home);
      this.live = link;
      this.trace.onRecord((record) => link.send(record));
    }
    const emit = (event: SessionEvent): void => this.dispatch(event);
    const compaction: CompactionDeps = (this.compaction = {
      store: compactionStoreOf(files),
      counter,
      now: this.now,
      summarizer: modelSummarizer({ llm: options.llm, counter, contextWindow: resolved.turn.contextWindow }),
    });
    this.model = { name: options.llm.model, contextWindow: resolved.turn.contextWindow };
    const builtIn = [
      ...memoryTools(files.memory, { onWrite: (w) => this.writes.push(w) }, { writeQuotaBytes: resolved.turn.writeQuotaBytes }),
      compactHistoryTool(compaction, { emit, onCompacted: () => (this.compacted = true) }),
    ];
    if (items)
      builtIn.push(
        ...itemMemoryTools(items.memory, {
          ...(options.itemMemory?.userId ? { userId: options.itemMemory.userId } : {}),
          afterChange: items.flush,
          redact: this.redact,
        }),
      );
    this.tools = [...builtIn, ...(options.tools ?? [])];
    const inject = items && options.itemMemory?.inject ? { limit: 5, maxTokens: 300, ...options.itemMemory.inject } : null;
    // Built-in tools read and write the memory itself: their output is never copied to detail/.
    const builtInNames = new Set(builtIn.map((t) => t.name));
    const limits = resolved.turn.toolOutput;
    const names = new Set<string>();
    for (const tool of this.tools) {
      if (names.has(tool.name)) throw new ConfigError(`two tools are named ${JSON.stringify(tool.name)}; tool names must be unique`);
      names.add(tool.name);
    }
    const toolMap = new Map(this.tools.map((t) => [t.name, t]));
    const saved = new SavedOutputNames(join(files.memory.root, TOOL_OUTPUTS_DIR), TOOL_OUTPUTS_DIR);
    const llm = options.llm;
    const statics: TurnStatics = {
      sessionId: files.id,
      systemPrompt: systemPrompt({
        ...(options.instructions ? { instructions: options.instructions } : {}),
        fallbackThreshold: resolved.turn.fallbackThreshold,
        toolNames: this.tools.map((t) => t.name),
      }),
      tools: this.tools.map((t) => t.spec),
      counter,
      settings: resolved.turn,
    };

    // What the machines' actors do for this session (the machines are provided once, for all sessions).
    const toolDeps = {
      files,
      tools: toolMap,
      counter,
      emit,
      now: this.now,
      drainWrites: () => this.writes.splice(0),
      drainCompacted: () => {
        const was = this.compacted;
        this.compacted = false;
        return was;
      },
      capture: (call: ToolCall, content: string, turn: number) =>
        capOutput(
          content,
          limits,
          builtInNames.has(call.function.name) ? null : (full) => files.memory.writeSystem(saved.name(turn, '.txt'), full),
        ),
    };
    const host: SessionHost = {
      report: emit,
      loadMemory: async (input) => {
        this.trackerWriter.persist(input.tracker);
        const snapshot = files.memory.snapshot();
        this.trace?.memory(snapshot.version, snapshot.content);
        if (!inject || !items) return snapshot;
        const relevant = relevantMemories(items.memory, latestUserText(files.history), inject, counter);
        return relevant ? { ...snapshot, relevant } : snapshot;
      },
      request: (input, signal) =>
        runLlmRequest(input, signal, {
          llm,
          files,
          counter,
          emit,
          saveArguments: (call, turn) => files.memory.writeSystem(saved.name(turn, '.arguments.json'), call.function.arguments),
          saveAnswer: (text, turn) => files.memory.writeSystem(saved.name(turn, '.answer.md'), text),
          ...(options.random ? { random: options.random } : {}),
          redact: this.redact,
        }),
      runTools: (input, signal) => runToolCalls(input, signal, toolDeps),
      compact: (input, signal) => runCompactor(input, compaction, signal),
      accept: async (input) => {
        // A turn stopped by a failed write may have left calls without results.
        for (const entry of answerInterruptedCalls(files, counter))
          emit({ type: 'message_end', turn: entry.turn, request: 0, seq: entry.seq, tokens: entry.tokens, message: entry.message });
        const message = { role: 'user' as const, content: input.prompt.text };
        const entry = files.appendMessage(input.turn, message, counter.message(message), { sync: true });
        emit({ type: 'message_end', turn: input.turn, request: 0, seq: entry.seq, tokens: entry.tokens, message });
        return { history: files.history };
      },
      save: async (input) => {
        files.updateMeta({
          turns: input.turn,
          historyMode: input.mode,
          pinnedMode: input.pinned,
          memoryWrites: input.modelWrites,
          calibration: input.output.calibration,
        });
        files.sync();
        // Written behind (the end of a turn does not wait for the state store); a failed earlier write is reported here.
        this.trackerWriter.persist(input.output.tracker);
        this.trackerWriter.throwIfFailed();
        return { history: files.history };
      },
    };
    statics.host = host;

    const meta = files.meta;
    const memory = files.memory.snapshot();
    const pinned = resolved.pinned ?? meta.pinnedMode;
    this.actor = createActor(hostedMachine(), {
      input: {
        statics,
        lastTurn: files.lastTurn,
        history: files.history,
        tracker,
        calibration: meta.calibration,
        mode: pinned ?? meta.historyMode,
        pinned,
        health: memory.health,
        modelWrites: meta.memoryWrites,
      },
      ...(options.inspect || this.trace ? { inspect: combineInspectors(options.inspect, this.trace?.inspect) } : {}),
    });
    this.trace?.memory(memory.version, memory.content);
    this.trace?.flush(); // a page opened now finds the start on disk; live records follow
    this.actor.on('*', (event) => this.dispatch(event as SessionEvent));
    this.actor.start();
  }

  /** Listen to one event type, or to all with '*'. Returns a function that stops listening. */
  on<T extends WorkmemEvent['type'] | '*'>(
    type: T,
    listener: (event: T extends '*' ? WorkmemEvent : Extract<WorkmemEvent, { type: T }>) => void,
  ): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as Listener);
    return () => set!.delete(listener as Listener);
  }

  /** Queue a user message; resolves when its turn has ended (done, failed or aborted). */
  prompt(text: string): Promise<TurnResult> {
    try {
      return this.enqueue(text).result;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Queue a user message. Its id is returned before any of its events happen (they carry
   * it: turn_start, turn_end), so a caller can pick out its own turn.
   */
  enqueue(text: string): { promptId: string; result: Promise<TurnResult> } {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    if (typeof text !== 'string' || text.trim() === '') throw new TypeError('prompt text must be a non-empty string');
    const tooLarge = promptProblem(text);
    if (tooLarge) throw new RangeError(tooLarge);
    const promptId = randomUUID();
    const result = new Promise<TurnResult>((resolve) => this.pending.set(promptId, resolve));
    queueMicrotask(() => this.actor.send({ type: 'PROMPT', prompt: { id: promptId, text } }));
    return { promptId, result };
  }

  /**
   * Compact now, between turns (the user's /compact): like compact_history, with reason
   * "manual". Refused while a turn runs: one writer per session.
   */
  async compact(
    options: { target?: CompactionTarget; strategy?: CompactionStrategy; keepRecent?: number } = {},
  ): Promise<CompactionResult> {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    if (this.state.running) throw new Error('a turn is running: wait for it or abort it, then compact');
    const target = options.target ?? 'all';
    const keepRecent = options.keepRecent ?? 3;
    if (!['conversation', 'tools', 'all'].includes(target)) throw new ConfigError(`unknown compaction target ${JSON.stringify(target)}`);
    if (!Number.isInteger(keepRecent) || keepRecent < 0)
      throw new ConfigError(`keepRecent must be a whole number of at least 0, got ${keepRecent}`);
    const turn = this.files.lastTurn;
    const before = totalTokens(this.files.history);
    const strategy = options.strategy === 'summarize' ? 'summarize' : 'archive';
    const base = { turn, request: 0, reason: 'manual' as const };
    this.dispatch({ type: 'compaction_start', ...base, tokensBefore: before });
    // Between turns none is active: every turn up to the last may be archived.
    const request = { kind: 'target', reason: 'manual', turn, activeTurn: turn + 1, target, strategy, keepRecent } as const;
    const { applied: result } = await compact(request, this.compaction, new AbortController().signal);
    this.dispatch({
      type: 'compaction_end',
      ...base,
      tokensBefore: before,
      tokensAfter: totalTokens(this.files.history),
      replaced: result.changed,
      files: result.files,
    });
    // The next turn starts from the log's view (accept reads it), so no history to hand over.
    if (result.changed) this.actor.send({ type: 'COMPACTED' });
    return result;
  }

  /** Abort the running turn (what it produced so far is kept) and drop queued prompts. */
  abort(): void {
    // Deferred like enqueue, so that enqueue-then-abort stops that very prompt.
    if (!this.closed) queueMicrotask(() => this.actor.send({ type: 'ABORT' }));
  }

  /** Pin a history mode, or return to automatic switching. */
  setMode(mode: HistoryMode | 'auto'): void {
    if (!['auto', 'phase1', 'phase2', 'hybrid'].includes(mode)) throw new ConfigError(`unknown history mode ${JSON.stringify(mode)}`);
    this.actor.send({ type: 'SET_MODE', mode });
    // Kept now, not only when the next turn ends: a pin set just before exit survives it.
    const { mode: current, pinned } = this.actor.getSnapshot().context;
    if (!this.closed) this.files.updateMeta({ historyMode: current, pinnedMode: pinned });
  }

  get state(): SessionState {
    const snapshot = this.actor.getSnapshot();
    const c = snapshot.context;
    return {
      id: this.id,
      dir: this.dir,
      mode: c.mode,
      pinned: c.pinned,
      turn: c.turn,
      running: !snapshot.matches('idle'),
      queued: c.queue.length,
      tracker: c.tracker,
      lastPrompt: this.lastPrompt,
    };
  }

  /** The derived history (what phase 1 would inject). */
  get history(): HistoryView {
    return this.files.history;
  }

  /** The current overview.md. */
  memory(): string {
    return this.files.memory.snapshot().content;
  }

  /** Resolves when no turn is running or queued. */
  async idle(): Promise<void> {
    await new Promise<void>((resolve) => queueMicrotask(resolve)); // prompts and aborts sent just before
    return new Promise((resolve) => {
      const check = (): boolean => {
        const s = this.actor.getSnapshot();
        return s.status !== 'active' || (s.matches('idle') && s.context.queue.length === 0);
      };
      if (check()) return resolve();
      const sub = this.actor.subscribe(() => {
        if (check()) {
          sub.unsubscribe();
          resolve();
        }
      });
    });
  }

  /** Abort whatever runs, persist, and release the files and the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.abort();
    await this.idle();
    this.closed = true;
    this.actor.stop();
    try {
      await this.trackerWriter.flush(this.actor.getSnapshot().context.tracker);
      await this.items?.flush();
    } finally {
      this.trace?.close();
      await this.live?.close();
      this.items?.detach();
      this.files.close();
      await this.store.close();
    }
  }

  private dispatch(raw: SessionEvent): void {
    const event = redactEvent(raw, this.redact);
    const stamped = { ...event, sessionId: this.id, ts: this.now() } as WorkmemEvent;
    this.trace?.event(stamped);
    if (event.type === 'prompt_built') this.lastPrompt = event.tokens;
    if (event.type === 'mode_changed') this.files.appendEvent(this.actor.getSnapshot().context.turn, 'mode_changed', { ...event });
    for (const set of [this.listeners.get(event.type), this.listeners.get('*')]) {
      for (const listener of set ?? []) {
        try {
          listener(stamped);
        } catch (error) {
          process.emitWarning(`workmem: an event listener threw: ${(error as Error)?.message ?? error}`);
        }
      }
    }
    if (event.type === 'turn_end')
      this.settle(event.promptId, {
        promptId: event.promptId,
        turn: event.turn,
        status: event.status,
        text: event.text,
        requests: event.requests,
        ...(event.error ? { error: event.error } : {}),
      });
    if (event.type === 'prompt_dropped')
      this.settle(event.promptId, { promptId: event.promptId, turn: null, status: 'aborted', text: '', requests: 0 });
  }

  private settle(promptId: string, result: TurnResult): void {
    const resolve = this.pending.get(promptId);
    if (!resolve) return;
    this.pending.delete(promptId);
    resolve(result);
  }
}

/**
 * Write-behind for the tracker: every request persists its state without waiting for
 * the store; at most one write is in flight and only the newest state is written next.
 * `flush` (at the end of each turn) waits and reports a failed write.
 */
class TrackerWriter {
  private latest: TrackerState | null = null;
  private lastQueued = '';
  private inflight: Promise<void> | null = null;
  private failure: unknown = null;

  constructor(
    private readonly store: StateStore,
    private readonly key: string,
  ) {}

  persist(state: TrackerState): void {
    const json = JSON.stringify(state);
    if (json === this.lastQueued) return;
    this.lastQueued = json;
    this.latest = state;
    this.inflight ??= this.drain();
  }

  async flush(state?: TrackerState): Promise<void> {
    if (state) this.persist(state);
    while (this.inflight) await this.inflight;
    this.throwIfFailed();
  }

  /** Report (once) a write that failed since the last check; the next state is written again. */
  throwIfFailed(): void {
    if (!this.failure) return;
    const failure = this.failure;
    this.failure = null;
    this.lastQueued = '';
    throw failure;
  }

  private async drain(): Promise<void> {
    try {
      while (this.latest) {
        const state = this.latest;
        this.latest = null;
        await this.store.set(this.key, state);
      }
    } catch (error) {
      this.failure = error;
    } finally {
      this.inflight = null;
    }
  }
}

/** What a session does for the actors of its machines; reached through TurnStatics.host. */
interface SessionHost {
  report(event: SessionEvent): void;
  loadMemory(input: MemoryStoreInput): Promise<MemorySnapshot>;
  request(input: LlmInput, signal: AbortSignal): Promise<LlmOutput>;
  runTools(input: ToolRunnerInput, signal: AbortSignal): Promise<ToolRunnerOutput>;
  compact(input: CompactorInput, signal: AbortSignal): Promise<CompactorOutput>;
  accept(input: AcceptInput): Promise<AcceptOutput>;
  save(input: SaveInput): Promise<SaveOutput>;
}

const hostOf = (input: { host?: unknown }): SessionHost => input.host as SessionHost;
let hosted: typeof sessionMachine | null = null;

/**
 * The session machine with its actors provided once for every session: providing per
 * session would build a new tree of state nodes each time (kilobytes per idle session).
 */
function hostedMachine(): typeof sessionMachine {
  hosted ??= sessionMachine.provide({
    actors: {
      turn: childTurn.provide({
        actions: {
          report: ({ context }: { context: { statics: TurnStatics } }, event: SessionEvent) => hostOf(context.statics).report(event),
        } as never,
        actors: {
          memoryStore: fromPromise<MemorySnapshot, MemoryStoreInput>(({ input }) => hostOf(input).loadMemory(input)),
          llm: fromPromise<LlmOutput, LlmInput>(({ input, signal }) => hostOf(input).request(input, signal)),
          toolRunner: fromPromise<ToolRunnerOutput, ToolRunnerInput>(({ input, signal }) => hostOf(input).runTools(input, signal)),
          compactor: fromPromise<CompactorOutput, CompactorInput>(({ input, signal }) => hostOf(input).compact(input, signal)),
        },
      }),
      accept: fromPromise<AcceptOutput, AcceptInput>(({ input }) => hostOf(input).accept(input)),
      save: fromPromise<SaveOutput, SaveInput>(({ input }) => hostOf(input).save(input)),
    },
  });
  return hosted;
}

function combineInspectors(...inspectors: (((event: InspectionEvent) => void) | undefined)[]): (event: InspectionEvent) => void {
  const list = inspectors.filter((i): i is (event: InspectionEvent) => void => !!i);
  return (event) => {
    for (const inspect of list) inspect(event);
  };
}

/** The latest real user message (not a compaction note). */
function latestUserText(view: HistoryView): string {
  for (let i = view.length - 1; i >= 0; i--) {
    const m = view.items[i]!.message;
    if (m.role === 'user' && !m.content.startsWith(NOTE_PREFIX)) return m.content;
  }
  return '';
}

/** The most relevant remembered items, best first, within a token budget. */
function relevantMemories(memory: ItemMemory, query: string, inject: { limit: number; maxTokens: number }, counter: TokenCounter): string {
  const lines: string[] = [];
  let used = 0;
  for (const { item } of memory.retrieve(query, { limit: inject.limit })) {
    const line = `- ${item.content} (importance ${item.importance})`;
    const tokens = counter.text(line) + 1;
    if (used + tokens > inject.maxTokens) break;
    lines.push(line);
    used += tokens;
  }
  return lines.join('\n');
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** The model's secrets, the host's and $OPENAI_API_KEY: never written or reported. */
function sessionRedactor(options: OpenOptions, env: NodeJS.ProcessEnv): Redact {
  return redactor([...(options.llm.secrets ?? []), ...(options.secrets ?? []), env.OPENAI_API_KEY]);
}
