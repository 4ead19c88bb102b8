/**
 * A session: queues user messages and runs one turn at a time (one writer per session),
 * owns the historyMode actor, persists after each turn, compacts between turns when the
 * user asks, and reports every event of its children outward. Its actors (`accept`:
 * durably append the user message; `save`: meta and tracker; `persistMode`: a mode change;
 * `compactor`: the user's compaction) do their work through the session's host.
 *
 * Over 350 lines: it is one statechart (its states and what each event does in each), read
 * and visualised whole; its types are in sessionTypes.ts.
 */
import { assign, emit, enqueueActions, fromPromise, raise, sendParent, sendTo, setup } from 'xstate';
import { toTurnError } from './turnErrors.js';
import { boundErrorText } from '../src/errors/errorText.js';
import type { SessionEvent, TokenUsage } from '../src/events.js';
import type { ToolSpec } from '../src/tools/tool.js';
import type { HistoryMode, HistoryView } from '../src/history/historyView.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';
import type { PromptBase } from '../src/prompt/promptBuilder.js';
import type { RecentWindow } from '../src/history/recentWindow.js';
import { remindNextRequest } from '../src/memory/reminderTracker.js';
import { backgroundOrder, backgroundRetryMs } from '../src/compaction/background.js';
import { stillCovers, type PreparedSummary } from '../src/compaction/prepared.js';
import { historyModeMachine, type ModeAnnouncement } from './historyModeMachine.js';
import { turnMachine, type CompactorInput, type CompactorOutput, type TurnOutput } from './turnMachine.js';

export type * from './sessionTypes.js';
import type {
  CompactionAsked,
  CompactionOutcome,
  HostCall,
  HostPass,
  HostPassOutcome,
  HostTools,
  AcceptCallInput,
  AcceptCallOutput,
  QueuedPrompt,
  SessionInput,
  AcceptInput,
  AcceptOutput,
  SaveInput,
  SaveOutput,
  PersistModeInput,
  BackgroundSummaryInput,
  SessionBackground,
} from './sessionTypes.js';

export interface SessionContext extends SessionInput {
  turn: number;
  queue: QueuedPrompt[];
  current: QueuedPrompt | null;
  base: PromptBase | null;
  tailHint: number;
  /** Phase 2's window when it holds still across turns (recentWindow.ts). */
  window: RecentWindow | null;
  /**
   * Mode saves started so far, for their ids: a child spawned without an id shares the key
   * `undefined` with every other, so a second save would take the first's place among the
   * session's children, and the first would outlive the session's stop and report to it.
   */
  modeSaves: number;
  last: TurnOutput | null;
  abortRequested: boolean;
  /** The user's compaction while it runs, and how the last one ended. */
  compaction: CompactionAsked | null;
  compacted: CompactionOutcome | null;
  /** A host loop's pass while it runs, how the last one ended, and the system prompt and tools of its calls. */
  pass: HostPass | null;
  passed: HostPassOutcome | null;
  callStatics: { systemPrompt: string; tools: readonly ToolSpec[]; toolPrefix?: string } | null;
  /** Requests of the current turn in a host loop's earlier passes. */
  requests: number;
  /** The usage the server reported for those requests: turn_end sums a host loop's turn as a Session's. */
  passUsage: TokenUsage | null;
  /** The fallback's next summary, prepared in the background: in progress, or ready to swap in. */
  background: SessionBackground;
}

export type SessionMachineEvent =
  | { type: 'prompt'; prompt: QueuedPrompt }
  | { type: 'abort' }
  | { type: 'mode.set'; mode: HistoryMode | 'auto' }
  | { type: 'memory.written'; health: MemoryHealth }
  /** Compact now, between turns (refused while a turn runs). */
  | ({ type: 'compact' } & CompactionAsked)
  /** A host loop's model call: record what is new, then the turn's request up to the model (refused while busy). */
  | { type: 'call'; call: HostCall }
  /** A host loop runs workmem's tools the model called (refused while busy). */
  | ({ type: 'tools' } & HostTools)
  | ({ type: 'mode.announced' } & Omit<ModeAnnouncement, 'type'>)
  /** The background summary is ready (raised by the background region for a running turn). */
  | { type: 'summary.ready' }
  /** Something the running turn reports (its events leave through the session). */
  | { type: 'turn.report'; event: SessionEvent };

/**
 * The turn as a child of the session: a memory write reaches the session (which asks its
 * historyMode to re-evaluate), and its reports go out through the session's.
 */
export const childTurn = turnMachine.provide({
  actions: {
    memoryWritten: sendParent((_, params: { health: MemoryHealth }) => ({ type: 'memory.written', health: params.health })),
    report: sendParent((_, event: SessionEvent) => ({ type: 'turn.report', event })),
  },
});

/** The history-mode actor as a child of the session: its announcements go to the session. */
export const childHistoryMode = historyModeMachine.provide({
  actions: { announce: sendParent((_, a: ModeAnnouncement) => ({ type: 'mode.announced', mode: a.mode, pinned: a.pinned })) },
});

/** The turn is over: an own-loop turn, or a host loop's answer with no tool calls left (or a failed pass). */
function turnEnded(context: SessionContext): boolean {
  return context.pass === null || (context.pass.kind === 'call' && (context.last!.toolCalls === 0 || context.last!.status !== 'done'));
}

function abortedOutput(context: SessionContext): TurnOutput {
  return {
    status: 'aborted',
    text: '',
    error: null,
    requests: 0,
    history: context.history,
    tracker: context.tracker,
    calibration: context.calibration,
    base: context.base,
    tailHint: context.tailHint,
    window: context.window,
    toolCalls: 0,
    results: [],
  };
}

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    input: {} as SessionInput,
    events: {} as SessionMachineEvent,
    emitted: {} as SessionEvent,
  },
  actors: {
    accept: fromPromise<AcceptOutput, AcceptInput>(async () => {
      throw new Error("session machine: actor 'accept' was not provided");
    }),
    save: fromPromise<SaveOutput, SaveInput>(async () => {
      throw new Error("session machine: actor 'save' was not provided");
    }),
    persistMode: fromPromise<void, PersistModeInput>(async () => {
      throw new Error("session machine: actor 'persistMode' was not provided");
    }),
    acceptCall: fromPromise<AcceptCallOutput, AcceptCallInput>(async () => {
      throw new Error("session machine: actor 'acceptCall' was not provided");
    }),
    compactor: fromPromise<CompactorOutput, CompactorInput>(async () => {
      throw new Error("session machine: actor 'compactor' was not provided");
    }),
    backgroundSummary: fromPromise<PreparedSummary, BackgroundSummaryInput>(async () => {
      throw new Error("session machine: actor 'backgroundSummary' was not provided");
    }),
    turn: childTurn,
    historyMode: childHistoryMode,
  },
  actions: {
    report: emit((_, event: SessionEvent) => event),
    dropQueue: enqueueActions(({ context, enqueue }) => {
      for (const prompt of context.queue) enqueue.emit({ type: 'prompt_dropped', promptId: prompt.id, text: prompt.text });
      enqueue.assign({ queue: [] });
    }),
    takeMode: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'mode.announced') return;
      const pinned = event.pinned ? event.mode : null;
      if (event.mode !== context.mode) enqueue.emit({ type: 'mode_changed', from: context.mode, to: event.mode, pinned: event.pinned });
      if (event.mode === context.mode && pinned === context.pinned) return;
      enqueue.spawnChild('persistMode', {
        id: `persistMode.${context.modeSaves}`,
        input: { turn: context.turn, from: context.mode, to: event.mode, pinned, host: context.statics.host },
      });
      enqueue.assign({ mode: event.mode, pinned, modeSaves: context.modeSaves + 1 });
    }),
    reportTurnStart: emit(({ context }) => ({
      type: 'turn_start' as const,
      turn: context.turn,
      promptId: context.current!.id,
      text: context.current!.text,
    })),
    reportTurnEnd: emit(({ context }) => turnEnd(context)),
    /** The history as saved (what an aborted request or tool run kept included). */
    takeSavedHistory: assign(({ event }) => ({ history: savedHistory(event) })),
    /** After saving: the turn's end when it ended, and a host loop's pass marked done for the facade. */
    endTurnOrPass: enqueueActions(({ context, enqueue }) => {
      if (turnEnded(context)) enqueue.emit(turnEnd(context));
      if (context.pass) enqueue.assign({ passed: { id: context.pass.id, output: context.last, error: null }, pass: null });
    }),
  },
  guards: {
    hasQueued: ({ context }) => context.queue.length > 0,
    abortRequested: ({ context }) => context.abortRequested,
    /** A host loop's pass is running (not a turn of the session's own loop). */
    passing: ({ context }) => context.pass !== null,
    savedHistoryChanged: ({ context, event }) => savedHistory(event) !== context.history,
    /** The history the next request carries passed the background threshold, and the fallback would archive something. */
    backgroundDue: ({ context }) => backgroundOrder(context) !== null,
    /** The turns being summarised are no longer all in the history: another compaction took them first. */
    orderSuperseded: ({ context }) => !stillCovers(context.background.order!, context.history),
    /** A turn swapped the ready summary in. */
    preparedUsed: ({ context }) => context.background.ready === null,
    preparedSuperseded: ({ context }) => !stillCovers(context.background.ready!, context.history),
  },
  delays: {
    backgroundRetry: ({ context }) => backgroundRetryMs(context.background.failures),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({
    ...input,
    turn: input.lastTurn,
    queue: [],
    current: null,
    base: null,
    tailHint: 0,
    window: input.window ?? null,
    modeSaves: 0,
    last: null,
    abortRequested: false,
    compaction: null,
    compacted: null,
    pass: null,
    passed: null,
    callStatics: null,
    requests: 0,
    passUsage: null,
    background: { order: null, ready: null, failures: 0 },
  }),
  invoke: {
    id: 'historyMode',
    src: 'historyMode',
    input: ({ context }) => ({ restored: context.mode, pinned: context.pinned, health: context.health, modelWrites: context.modelWrites }),
  },
  on: {
    prompt: { actions: assign({ queue: ({ context, event }) => [...context.queue, event.prompt] }) },
    abort: { actions: 'dropQueue' },
    'mode.set': {
      actions: sendTo('historyMode', ({ event }) =>
        event.mode === 'auto' ? { type: 'mode.unpin' as const } : { type: 'mode.pin' as const, mode: event.mode },
      ),
    },
    'mode.announced': { actions: 'takeMode' },
    'turn.report': { actions: emit(({ event }) => event.event) },
    // Outside idle: one writer per session, so the user's compaction waits for no turn; it is refused.
    compact: {
      actions: assign({ compacted: ({ event }) => ({ id: event.id, error: 'a turn is running: wait for it or abort it, then compact' }) }),
    },
    call: { actions: assign({ passed: ({ event }) => ({ id: event.call.id, output: null, error: BUSY }) }) },
    tools: { actions: assign({ passed: ({ event }) => ({ id: event.id, output: null, error: BUSY }) }) },
  },
  type: 'parallel',
  states: {
    turns: {
      initial: 'idle',
      states: {
        idle: {
          always: { guard: 'hasQueued', target: 'accepting' },
          on: {
            // Idle holds no queue (a queued prompt leaves it at once): the prompt is the one to accept, without a stop in the queue.
            prompt: { target: 'accepting' },
            compact: {
              target: 'compacting',
              actions: assign({
                compaction: ({ event }) => ({ id: event.id, target: event.target, strategy: event.strategy, keepRecent: event.keepRecent }),
              }),
            },
            call: { target: 'acceptingCall', actions: assign({ pass: ({ event }) => ({ id: event.call.id, kind: 'call' as const }) }) },
            tools: {
              target: 'running',
              actions: assign({ pass: ({ event }) => ({ id: event.id, kind: 'tools' as const, calls: event.calls }) }),
            },
          },
        },
        acceptingCall: {
          invoke: {
            id: 'acceptCall',
            src: 'acceptCall',
            input: ({ context, event }) => ({ call: (event as { call: HostCall }).call, turn: context.turn, host: context.statics.host }),
            onDone: {
              target: 'running',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const { history, turn, opened, systemPrompt, tools, toolPrefix } = event.output;
                enqueue.assign({ history, turn, callStatics: { systemPrompt, tools, toolPrefix: toolPrefix ?? '' } });
                if (!opened) return;
                const current = { id: context.pass!.id, text: opened.text };
                enqueue.assign({ current, requests: 0, passUsage: null });
                enqueue.emit({ type: 'turn_start', turn, promptId: current.id, text: current.text });
              }),
            },
            onError: {
              target: 'idle',
              actions: [
                {
                  type: 'report',
                  params: ({ context, event }) => ({
                    type: 'error',
                    turn: context.turn,
                    error: {
                      kind: 'storage',
                      message: `the call's messages were not saved: ${errorMessage(event.error)}`,
                      retryable: false,
                    },
                    fatal: true,
                  }),
                },
                assign(({ context, event }) => ({
                  passed: { id: context.pass!.id, output: null, error: errorMessage(event.error) },
                  pass: null,
                })),
              ],
            },
          },
        },
        compacting: {
          invoke: {
            id: 'compactor',
            src: 'compactor',
            input: ({ context }) => {
              const asked = context.compaction!;
              return {
                // Between turns none is active: every turn up to the last may be archived.
                order: {
                  kind: 'target' as const,
                  reason: 'manual' as const,
                  turn: context.turn,
                  activeTurn: context.turn + 1,
                  target: asked.target,
                  strategy: asked.strategy,
                  keepRecent: asked.keepRecent,
                },
                request: 0,
                host: context.statics.host,
              };
            },
            onDone: {
              target: 'idle',
              actions: assign(({ context, event }) => ({
                history: event.output.history,
                // The next request reminds the model to bring its memory up to date.
                tracker: event.output.replaced > 0 ? remindNextRequest(context.tracker) : context.tracker,
                compacted: { id: context.compaction!.id, result: event.output.result },
                compaction: null,
              })),
            },
            onError: {
              target: 'idle',
              actions: assign(({ context, event }) => ({
                compacted: { id: context.compaction!.id, error: toTurnError(event.error, 'storage').message },
                compaction: null,
              })),
            },
          },
        },
        accepting: {
          entry: [
            // The spread last: one first, then fields, gets a hidden class of its own every time (V8 11).
            assign(({ context, event }) => ({
              turn: context.turn + 1,
              abortRequested: false,
              ...(event.type === 'prompt' ? { current: event.prompt } : { current: context.queue[0]!, queue: context.queue.slice(1) }),
            })),
            'reportTurnStart',
          ],
          on: {
            abort: { actions: ['dropQueue', assign({ abortRequested: true })] },
          },
          invoke: {
            id: 'accept',
            src: 'accept',
            input: ({ context }) => ({ prompt: context.current!, turn: context.turn, host: context.statics.host }),
            onDone: [
              {
                guard: 'abortRequested',
                target: 'saving',
                actions: assign(({ context, event }) => ({
                  history: event.output.history,
                  last: abortedOutput({ ...context, history: event.output.history }),
                })),
              },
              { target: 'running', actions: assign({ history: ({ event }) => event.output.history }) },
            ],
            onError: {
              target: 'idle',
              actions: [
                {
                  type: 'report',
                  params: ({ context, event }) => ({
                    type: 'error',
                    turn: context.turn,
                    error: {
                      kind: 'storage',
                      message: `your message was not saved: ${errorMessage(event.error)}. Nothing was sent to the model; send it again once that is fixed.`,
                      retryable: false,
                    },
                    fatal: true,
                  }),
                },
                {
                  type: 'report',
                  params: ({ context, event }) => ({
                    type: 'turn_end',
                    turn: context.turn,
                    promptId: context.current!.id,
                    status: 'failed',
                    text: '',
                    requests: 0,
                    error: { kind: 'storage', message: errorMessage(event.error), retryable: false },
                  }),
                },
                // The message never reached the log: this turn number is free again.
                assign(({ context }) => ({ turn: context.turn - 1, current: null })),
              ],
            },
          },
        },
        running: {
          on: {
            abort: { actions: ['dropQueue', sendTo('turn', { type: 'abort' })] },
            'memory.written': {
              actions: enqueueActions(({ context, event, enqueue }) => {
                const modelWrites = context.modelWrites + 1;
                enqueue.assign({ modelWrites, health: event.health });
                enqueue.sendTo('historyMode', { type: 'memory.evaluate', health: event.health, modelWrites });
              }),
            },
            'mode.announced': {
              actions: ['takeMode', sendTo('turn', ({ event }) => ({ type: 'mode.changed' as const, mode: event.mode }))],
            },
            'summary.ready': {
              actions: sendTo('turn', ({ context }) => ({ type: 'summary.ready' as const, prepared: context.background.ready! })),
            },
          },
          invoke: {
            id: 'turn',
            src: 'turn',
            input: ({ context }) => ({
              // A host loop's calls carry their own system prompt and tools.
              statics: context.callStatics ? { ...context.statics, ...context.callStatics } : context.statics,
              turn: context.turn,
              history: context.history,
              mode: context.mode,
              tracker: context.tracker,
              calibration: context.calibration,
              base: context.base,
              tailHint: context.tailHint,
              window: context.window,
              ...(context.pass ? { hostLoop: true, request: context.requests, usage: context.passUsage } : {}),
              ...(context.pass?.kind === 'tools' ? { calls: context.pass.calls } : {}),
              ...(context.background.ready ? { prepared: context.background.ready } : {}),
            }),
            onDone: {
              target: 'saving',
              actions: assign(({ context, event }) => ({
                last: event.output,
                history: event.output.history,
                tracker: event.output.tracker,
                calibration: event.output.calibration,
                base: event.output.base,
                tailHint: event.output.tailHint,
                window: event.output.window,
                requests: context.pass ? event.output.requests : 0,
                passUsage: context.pass ? (event.output.usage ?? null) : null,
                background: event.output.preparedUsed ? { ...context.background, ready: null } : context.background,
              })),
            },
          },
        },
        saving: {
          invoke: {
            id: 'save',
            src: 'save',
            input: ({ context }) => ({
              turn: context.turn,
              output: context.last!,
              mode: context.mode,
              pinned: context.pinned,
              modelWrites: context.modelWrites,
              host: context.statics.host,
            }),
            // Mostly the history the turn ended with: a turn of the session's own loop copies no context then.
            onDone: [
              { guard: 'passing', target: 'idle', actions: ['takeSavedHistory', 'endTurnOrPass'] },
              { guard: 'savedHistoryChanged', target: 'idle', actions: ['takeSavedHistory', 'reportTurnEnd'] },
              { target: 'idle', actions: 'reportTurnEnd' },
            ],
            onError: {
              target: 'idle',
              actions: [
                {
                  type: 'report',
                  params: ({ context, event }) => ({
                    type: 'error',
                    turn: context.turn,
                    error: {
                      kind: 'storage',
                      message: `the session state was not saved: ${errorMessage(event.error)}. The conversation is in messages.jsonl; the state is rebuilt from it when the session is opened again.`,
                      retryable: false,
                    },
                    fatal: false,
                  }),
                },
                'endTurnOrPass',
              ],
            },
          },
        },
      },
    },
    /**
     * The fallback's next summary, made while the turns go on: started once the history the
     * next request carries passes the background threshold; ready, it waits for the fallback
     * (the turn machine swaps it in, maybeCompact); dropped when another compaction took its
     * turns first; after a failure, tried again later. Never part of a turn: nothing waits for it.
     */
    background: {
      initial: 'waiting',
      states: {
        waiting: {
          always: {
            guard: 'backgroundDue',
            target: 'summarizing',
            actions: [
              assign(({ context }) => ({ background: { ...context.background, order: backgroundOrder(context) } })),
              {
                type: 'report',
                params: ({ context }) => {
                  const order = context.background.order!;
                  const messages = order.items.length - order.kept.length;
                  return { type: 'background_start', turn: context.turn, turns: order.turns, messages, tokens: order.tokens };
                },
              },
            ],
          },
        },
        summarizing: {
          always: {
            guard: 'orderSuperseded',
            target: 'waiting',
            actions: [
              { type: 'report', params: ({ context }) => ({ type: 'background_end', turn: context.turn, status: 'superseded' }) },
              assign(({ context }) => ({ background: { ...context.background, order: null } })),
            ],
          },
          invoke: {
            id: 'background',
            src: 'backgroundSummary',
            input: ({ context }) => ({ order: context.background.order!, host: context.statics.host }),
            onDone: {
              target: 'ready',
              actions: [
                assign({ background: ({ event }) => ({ order: null, ready: event.output, failures: 0 }) }),
                {
                  type: 'report',
                  params: ({ context, event }) => ({
                    type: 'background_end',
                    turn: context.turn,
                    status: 'ready',
                    ms: event.output.ms,
                    ...(event.output.usage ? { usage: event.output.usage } : {}),
                  }),
                },
                raise({ type: 'summary.ready' }),
              ],
            },
            onError: {
              target: 'resting',
              actions: [
                {
                  type: 'report',
                  params: ({ context, event }) => ({
                    type: 'background_end',
                    turn: context.turn,
                    status: 'failed',
                    ...failedCall(event.error),
                  }),
                },
                assign(({ context }) => ({ background: { order: null, ready: null, failures: context.background.failures + 1 } })),
              ],
            },
          },
        },
        ready: {
          always: [
            { guard: 'preparedUsed', target: 'waiting' },
            {
              guard: 'preparedSuperseded',
              target: 'waiting',
              actions: [
                {
                  type: 'report',
                  params: ({ context }) => ({ type: 'background_dropped', turn: context.turn, turns: context.background.ready!.turns }),
                },
                assign(({ context }) => ({ background: { ...context.background, ready: null } })),
              ],
            },
          ],
        },
        // A failed summary is tried again later (backgroundRetryMs); the fallback summarises meanwhile if it must.
        resting: {
          after: { backgroundRetry: { target: 'waiting' } },
        },
      },
    },
  },
});

function turnEnd(context: SessionContext): SessionEvent {
  const last = context.last!;
  return {
    type: 'turn_end',
    turn: context.turn,
    promptId: context.current!.id,
    status: last.status,
    text: last.text,
    requests: last.requests,
    ...(last.error ? { error: last.error } : {}),
    ...(last.usage ? { usage: last.usage } : {}),
  };
}

const BUSY = 'the session is busy with another call: one at a time';

/** Only ever read on the save actor's onDone, whose event carries its output. */
function savedHistory(event: unknown): HistoryView {
  return (event as { output: SaveOutput }).output.history;
}

/** A failed background summary's report: how long it ran and why it failed (its model's error kind, when a model failed); it is tried again. */
function failedCall(error: unknown): { ms?: number; error: ReturnType<typeof toTurnError> } {
  const ms = (error as { ms?: unknown } | null)?.ms;
  const cause = toTurnError((error as { cause?: unknown } | null)?.cause ?? error);
  return { ...(typeof ms === 'number' ? { ms } : {}), error: { ...cause, message: errorMessage(error), retryable: true } };
}

function errorMessage(error: unknown): string {
  return boundErrorText(error instanceof Error ? error.message : String(error));
}
