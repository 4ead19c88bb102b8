/**
 * A running session, as its host sees it: prompt and enqueue, abort, compact, setMode,
 * its state, history and memory, events by type, close. Behind it, the session machine
 * runs the turns and the host (src/actors/sessionHost.ts) does their work.
 */
import { randomUUID } from 'node:crypto';
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import type { sessionMachine } from '../../machines/sessionMachine.js';
import type { SessionStatics } from '../../machines/sessionMachine.js';
import { hostedSessionMachine } from '../actors/hostedMachine.js';
import { sessionHost } from '../actors/sessionHost.js';
import { compact, type CompactionDeps, type CompactionResult } from '../compaction/compact.js';
import type { CompactionStrategy, CompactionTarget } from '../compaction/plan.js';
import { compactionStoreOf } from '../compaction/store.js';
import { modelSummarizer } from '../compaction/summarizer.js';
import type { SessionEvent, WorkmemEvent } from '../events.js';
import { totalTokens, type HistoryMode, type HistoryView } from '../history/historyView.js';
import type { PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { latestUserText, relevantMemories } from '../itemMemory/relevantMemories.js';
import { promptProblem } from '../llm/captureBounds.js';
import { sumUsage } from '../llm/llm.js';
import { HeldWrites } from '../memory/heldWrites.js';
import type { TrackerState } from '../memory/reminderTracker.js';
import { systemPrompt } from '../prompt/systemPrompt.js';
import { ConfigError, type resolveSettings } from '../settings/config.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import type { MemorySnapshot } from '../memory/memoryRules.js';
import { defaultHome } from '../storage/sessionPaths.js';
import type { StateStore } from '../storage/stateStore.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { Tool } from '../tools/tool.js';
import { LiveLink, liveUrl } from '../viz/liveLink.js';
import { TraceRecorder } from '../viz/traceRecorder.js';
import { EventBus } from './eventBus.js';
import { TRACKER_KEY, type OpenOptions, type SessionState, type TurnResult } from './options.js';
import { sessionTools } from './sessionTools.js';
import { TrackerWriter } from './trackerWriter.js';

/** What the registry hands a new Session: its opened files and store, and what opening found. */
export interface SessionParts {
  record: SessionRecord;
  /** The working memory as it was opened (the first request loads it again). */
  memory: MemorySnapshot;
  store: StateStore;
  counter: TokenCounter;
  options: OpenOptions;
  resolved: ReturnType<typeof resolveSettings>;
  tracker: TrackerState;
  damage: string[];
  items: PersistentItemMemory | null;
  /** Opened from disk (the trace continues) rather than created. */
  resumed: boolean;
}

export class Session {
  readonly id: string;
  readonly dir: string;
  /** Problems found when the session was opened (damaged lines, a rebuilt meta.json). */
  readonly damage: readonly string[];
  readonly tools: readonly Tool[];
  /** The session's log, meta and working memory, on whatever store holds them. */
  readonly record: SessionRecord;
  readonly counter: TokenCounter;
  /** The model's name and the window the session works with. */
  readonly model: { name: string; contextWindow: number };
  private readonly actor: Actor<typeof sessionMachine>;
  private readonly bus: EventBus;
  private readonly pending = new Map<string, (result: TurnResult) => void>();
  private readonly trackerWriter: TrackerWriter;
  private readonly store: StateStore;
  private readonly items: PersistentItemMemory | null;
  private readonly trace: TraceRecorder | null;
  private readonly compaction: CompactionDeps;
  private live: LiveLink | null = null;
  private closed = false;
  private lastPrompt: SessionState['lastPrompt'] = null;
  private usage: SessionState['usage'];
  private readonly initialMemory: MemorySnapshot;

  constructor(parts: SessionParts) {
    const { record, counter, options, resolved, items } = parts;
    const now = options.now ?? Date.now;
    this.record = record;
    this.initialMemory = parts.memory;
    this.counter = counter;
    this.store = parts.store;
    this.items = items;
    this.id = record.id;
    this.dir = record.dir;
    this.damage = parts.damage;
    this.trackerWriter = new TrackerWriter(parts.store, TRACKER_KEY(record.id));
    const trace = (this.trace =
      options.trace === false ? null : new TraceRecorder(record.storage.trace, record.id, parts.resumed, now, record.redact));
    if (trace && options.visualizer) {
      const home = options.home ?? defaultHome(options.env ?? process.env); // where the viz token is
      const link = (this.live = new LiveLink(liveUrl(options.visualizer), record.id, options.warn, home));
      trace.onRecord((record) => link.send(record));
    }
    this.bus = new EventBus(record.id, record.redact, now, trace ? (event) => trace.event(event) : undefined, options.warn);
    const emit = (event: SessionEvent): void => this.dispatch(event);
    this.compaction = {
      store: compactionStoreOf(record),
      counter,
      now,
      summarizer: modelSummarizer({ llm: options.llm, counter, contextWindow: resolved.turn.contextWindow }),
      contextWindow: resolved.turn.contextWindow,
      lastRequest: () => this.lastPrompt,
    };
    this.model = { name: options.llm.model, contextWindow: resolved.turn.contextWindow };
    const tools = sessionTools({
      memory: record.memory,
      compaction: this.compaction,
      items,
      options,
      writeQuotaBytes: resolved.turn.writeQuotaBytes,
      held: new HeldWrites(record.heldFiles, resolved.turn.sessionWriteQuotaBytes),
      redact: record.redact,
      emit,
    });
    this.tools = tools.all;
    const inject = items && options.itemMemory?.inject ? { ...options.itemMemory.inject, userId: options.itemMemory.userId } : null;
    const statics: SessionStatics = {
      sessionId: record.id,
      systemPrompt: systemPrompt({
        ...(options.instructions ? { instructions: options.instructions } : {}),
        fallbackThreshold: resolved.turn.fallbackThreshold,
        toolNames: this.tools.map((t) => t.name),
      }),
      tools: this.tools.map((t) => t.spec),
      counter,
      settings: resolved.turn,
      host: sessionHost({
        record,
        counter,
        llm: options.llm,
        tools: this.tools,
        builtIn: tools.builtIn,
        outputLimits: resolved.turn.toolOutput,
        compaction: this.compaction,
        tracker: this.trackerWriter,
        trace,
        emit,
        now,
        ...(options.random ? { random: options.random } : {}),
        redact: record.redact,
        ...(inject && items
          ? { relevant: (history: HistoryView) => relevantMemories(items.memory, latestUserText(history), inject, counter) }
          : {}),
      }),
    };

    const meta = record.meta;
    const memory = parts.memory;
    const pinned = resolved.pinned ?? meta.pinnedMode;
    this.actor = createActor(hostedSessionMachine(), {
      input: {
        statics,
        lastTurn: record.lastTurn,
        history: record.history,
        tracker: parts.tracker,
        calibration: meta.calibration,
        mode: pinned ?? meta.historyMode,
        pinned,
        health: memory.health,
        modelWrites: meta.memoryWrites,
        window: meta.recentWindow ?? null,
      },
      ...(options.inspect || trace ? { inspect: combineInspectors(options.inspect, trace?.inspect) } : {}),
    });
    trace?.memory(memory.version, memory.content);
    trace?.flush(); // a page opened now finds the start on disk; live records follow
    this.actor.on('*', (event) => this.dispatch(event as SessionEvent));
    this.actor.start();
  }

  /** Listen to one event type, or to all with '*'. Returns a function that stops listening. */
  on<T extends WorkmemEvent['type'] | '*'>(
    type: T,
    listener: (event: T extends '*' ? WorkmemEvent : Extract<WorkmemEvent, { type: T }>) => void,
  ): () => void {
    return this.bus.on(type, listener as (event: WorkmemEvent) => void);
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
    queueMicrotask(() => this.actor.send({ type: 'prompt', prompt: { id: promptId, text } }));
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
    const turn = this.record.lastTurn;
    const before = totalTokens(this.record.history);
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
      tokensAfter: totalTokens(this.record.history),
      replaced: result.changed,
      files: result.files,
    });
    // The next turn starts from the log's view (accept reads it), so no history to hand over.
    if (result.changed) this.actor.send({ type: 'history.compacted' });
    return result;
  }

  /** Abort the running turn (what it produced so far is kept) and drop queued prompts. */
  abort(): void {
    // Deferred like enqueue, so that enqueue-then-abort stops that very prompt.
    if (!this.closed) queueMicrotask(() => this.actor.send({ type: 'abort' }));
  }

  /** Pin a history mode, or return to automatic switching. */
  setMode(mode: HistoryMode | 'auto'): void {
    if (!['auto', 'phase1', 'phase2', 'hybrid'].includes(mode)) throw new ConfigError(`unknown history mode ${JSON.stringify(mode)}`);
    if (!this.closed) this.actor.send({ type: 'mode.set', mode }); // kept at once by the persistMode actor
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
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }

  /** The derived history (what phase 1 would inject). */
  get history(): HistoryView {
    return this.record.history;
  }

  /** The current overview.md. */
  memory(): string {
    return (this.record.memory.lastSnapshot ?? this.initialMemory).content;
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
      await this.record.close();
      await this.store.close();
    }
  }

  private dispatch(raw: SessionEvent): void {
    const event = this.bus.publish(raw);
    if (event.type === 'prompt_built') this.lastPrompt = event.tokens;
    if (event.type === 'turn_end' && event.usage) this.usage = sumUsage(this.usage, event.usage);
    if (event.type === 'turn_end')
      this.settle(event.promptId, {
        promptId: event.promptId,
        turn: event.turn,
        status: event.status,
        text: event.text,
        requests: event.requests,
        ...(event.error ? { error: event.error } : {}),
        ...(event.usage ? { usage: event.usage } : {}),
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

function combineInspectors(...inspectors: (((event: InspectionEvent) => void) | undefined)[]): (event: InspectionEvent) => void {
  const list = inspectors.filter((i): i is (event: InspectionEvent) => void => !!i);
  return (event) => {
    for (const inspect of list) inspect(event);
  };
}
