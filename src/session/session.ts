/**
 * A running session, as its host sees it: prompt and enqueue, abort, compact, setMode,
 * its state, history and memory, the next request, events by type, close. A facade: the
 * session machine runs the turns and the compactions; sessionWiring.ts wires it.
 */
import { randomUUID } from 'node:crypto';
import { createActor, waitFor, type Actor } from 'xstate';
import type { HostCall, HostPassOutcome, HostTools, SessionBackground, sessionMachine } from '../../machines/sessionMachine.js';
import { sumUsage } from '../../machines/tokenUsage.js';
import { hostedSessionMachine } from '../actors/hostedMachine.js';
import type { CompactionResult } from '../compaction/compact.js';
import type { CompactionStrategy, CompactionTarget } from '../compaction/plan.js';
import type { SessionEvent, WorkmemEvent } from '../events.js';
import type { HistoryMode, HistoryView } from '../history/historyView.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import { promptProblem } from '../llm/captureBounds.js';
import type { BuiltPrompt } from '../prompt/promptBuilder.js';
import { nextRequestEstimate } from '../prompt/requestPlan.js';
import { ConfigError } from '../settings/config.js';
import type { TurnSettings } from '../settings/settings.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { Tool } from '../tools/tool.js';
import type { SessionTools } from './sessionTools.js';
import { skipActorRegistry } from './actorSystem.js';
import type { EventBus } from './eventBus.js';
import type { BackgroundState, SessionState, TurnResult } from './options.js';
import { pinOption } from './sessionOptionsCheck.js';
import { wireSession, type SessionParts, type SessionWiring } from './sessionWiring.js';

export type { SessionParts } from './sessionWiring.js';

/** A running session: prompt it, listen to its events, compact it, pin its history mode, close it. */
export class Session {
  readonly id: string;
  readonly dir: string;
  /** Problems found when the session was opened (damaged lines, a rebuilt meta.json). */
  readonly damage: readonly string[];
  /** The session's log, meta and working memory, on whatever store holds them. */
  readonly record: SessionRecord;
  readonly counter: TokenCounter;
  /** The model's name and the window the session works with. */
  readonly model: { name: string; contextWindow: number };
  /** The settings the session works with (defaults, environment and overrides resolved). */
  readonly settings: TurnSettings;
  private readonly actor: Actor<typeof sessionMachine>;
  private readonly bus: EventBus;
  private readonly wiring: SessionWiring;
  private readonly pending = new Map<string, (result: TurnResult) => void>();
  private closed = false;
  private lastPrompt: SessionState['lastPrompt'] = null;
  private usage: SessionState['usage'];
  private readonly backgroundCounts: Omit<BackgroundState, 'status' | 'turns'> = { made: 0, used: 0, dropped: 0, failed: 0 };
  private readonly initialMemory: SessionParts['memory'];

  constructor(parts: SessionParts) {
    const { record, options, resolved } = parts;
    this.record = record;
    this.initialMemory = parts.memory;
    this.counter = parts.counter;
    this.id = record.id;
    this.dir = record.dir;
    this.damage = parts.damage;
    this.settings = resolved.turn;
    this.model = { name: options.llm.model, contextWindow: resolved.turn.contextWindow };
    this.wiring = wireSession(
      parts,
      (event) => this.dispatch(event),
      () => this.lastPrompt,
    );
    this.bus = this.wiring.bus;
    const inspect = this.wiring.inspect;
    this.actor = createActor(hostedSessionMachine(), { input: this.wiring.input, ...(inspect ? { inspect } : {}) });
    skipActorRegistry(this.actor.system);
    this.actor.on('*', (event) => this.dispatch(event as SessionEvent));
    this.actor.start();
  }

  /** The tools the model gets, as sent: workmem's own (prefixed when one of the host's has one of their names, see toolNaming.ts), then the host's. */
  get tools(): readonly Tool[] {
    return this.wiring.tools.all;
  }

  /** @internal The session's tools and the names workmem's own are sent under (a host loop names them beside its host's). */
  get toolBox(): SessionTools {
    return this.wiring.tools;
  }

  /** Listen to one event type, or to all with '*'. Returns a function that stops listening. */
  on<T extends WorkmemEvent['type'] | '*'>(
    type: T,
    listener: (event: T extends '*' ? WorkmemEvent : Extract<WorkmemEvent, { type: T }>) => void,
  ): () => void {
    return this.bus.on(type, listener as (event: WorkmemEvent) => void);
  }

  /**
   * Queue a user message; resolves when its turn has ended (done, failed or aborted). With
   * `pin: true` (the task statement, rules) every request carries it and no compaction replaces it.
   */
  prompt(text: string, options: { pin?: boolean } = {}): Promise<TurnResult> {
    try {
      return this.enqueue(text, options).result;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Queue a user message (pinned with `pin: true`, as for prompt). Its id is returned before
   * any of its events happen (they carry it: turn_start, turn_end), so a caller can pick out its own turn.
   */
  enqueue(text: string, options: { pin?: boolean } = {}): { promptId: string; result: Promise<TurnResult> } {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    if (typeof text !== 'string' || text.trim() === '') throw new TypeError('prompt text must be a non-empty string');
    const tooLarge = promptProblem(text);
    if (tooLarge) throw new RangeError(tooLarge);
    const pinned = pinOption(options);
    const promptId = randomUUID();
    const result = new Promise<TurnResult>((resolve) => this.pending.set(promptId, resolve));
    this.wiring.enqueued?.(promptId);
    queueMicrotask(() => this.actor.send({ type: 'prompt', prompt: { id: promptId, text, ...(pinned ? { pinned } : {}) } }));
    return { promptId, result };
  }

  /**
   * Compact now, between turns (the user's /compact): like compact_history, with reason
   * "manual", through the session machine. Refused while a turn runs: one writer per session.
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
    const id = randomUUID();
    const strategy = options.strategy === 'summarize' ? 'summarize' : 'archive';
    this.actor.send({ type: 'compact', id, target, strategy, keepRecent });
    const done = await waitFor(this.actor, (s) => s.context.compacted?.id === id, { timeout: Infinity });
    const outcome = done.context.compacted!;
    if ('error' in outcome) throw new Error(outcome.error);
    return outcome.result;
  }

  /**
   * A pass of a host's own loop (hostLoop.ts): a model call's messages, or workmem's tools
   * to run, through the session machine; resolves with how the pass ended.
   * @internal
   */
  async hostPass(event: { type: 'call'; call: HostCall } | ({ type: 'tools' } & HostTools)): Promise<HostPassOutcome> {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    const id = event.type === 'call' ? event.call.id : event.id;
    this.actor.send(event);
    const done = await waitFor(this.actor, (s) => s.context.passed?.id === id, { timeout: Infinity });
    return done.context.passed!;
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
      running: !snapshot.matches({ turns: 'idle' }),
      queued: c.queue.length,
      tracker: c.tracker,
      lastPrompt: this.lastPrompt,
      ...(this.usage ? { usage: this.usage } : {}),
      background: this.backgroundState(snapshot.value, c.background, c.statics.settings.backgroundThreshold),
    };
  }

  private backgroundState(value: unknown, background: SessionBackground, threshold: number | null): BackgroundState {
    const status = threshold === null ? 'off' : (((value as { background?: string }).background ?? 'waiting') as BackgroundState['status']);
    const turns = background.order?.turns ?? background.ready?.turns;
    return { status, ...(turns ? { turns } : {}), ...this.backgroundCounts };
  }

  /** The derived history (what phase 1 would inject). */
  get history(): HistoryView {
    return this.record.history;
  }

  /** The current overview.md. */
  memory(): string {
    return (this.record.memory.lastSnapshot ?? this.initialMemory).content;
  }

  /**
   * The request the next message will open, as the turn will build it (reminder included)
   * but for the message's own tokens: what `/context` shows before the first request.
   */
  async nextRequest(): Promise<BuiltPrompt> {
    const c = this.actor.getSnapshot().context;
    const memory = await this.record.memory.snapshot();
    return nextRequestEstimate({ ...c, history: this.record.history, turn: this.record.lastTurn + 1, prompt: null }, memory);
  }

  /** Resolves when no turn is running or queued. */
  async idle(): Promise<void> {
    await new Promise<void>((resolve) => queueMicrotask(resolve)); // prompts and aborts sent just before
    return new Promise((resolve) => {
      const check = (): boolean => {
        const s = this.actor.getSnapshot();
        return s.status !== 'active' || (s.matches({ turns: 'idle' }) && s.context.queue.length === 0);
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
    await this.wiring.close(this.actor.getSnapshot().context.tracker);
  }

  private dispatch(raw: SessionEvent): void {
    const event = this.bus.publish(raw);
    if (event.type === 'prompt_built') this.lastPrompt = event.tokens;
    if (event.type === 'turn_end' && event.usage) this.usage = sumUsage(this.usage, event.usage);
    if (event.type.startsWith('background_') || event.type === 'compaction_end') this.countBackground(event);
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

  private countBackground(event: SessionEvent): void {
    const counts = this.backgroundCounts;
    if (event.type === 'background_end') {
      if (event.status === 'ready') counts.made++;
      else if (event.status === 'failed') counts.failed++;
      else counts.dropped++;
      if (event.usage) counts.usage = sumUsage(counts.usage, event.usage);
    } else if (event.type === 'background_dropped') counts.dropped++;
    else if (event.type === 'compaction_end' && event.reason === 'background' && event.replaced > 0) counts.used++;
  }

  private settle(promptId: string, result: TurnResult): void {
    const resolve = this.pending.get(promptId);
    if (!resolve) return;
    this.pending.delete(promptId);
    resolve(result);
  }
}
