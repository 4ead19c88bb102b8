/**
 * A session: queues user messages and runs one turn at a time (one writer per session),
 * owns the historyMode actor, persists after each turn, and reports every event of its
 * children outward. Its actors (`accept`: durably append the user message; `save`: meta
 * and tracker; `persistMode`: a mode change) do their work through the session's host.
 */
import { assign, emit, enqueueActions, fromPromise, sendParent, sendTo, setup } from 'xstate';
import type { SessionEvent } from '../src/events.js';
import type { HistoryMode } from '../src/history/historyView.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';
import type { PromptBase } from '../src/prompt/promptBuilder.js';
import type { RecentWindow } from '../src/history/recentWindow.js';
import { remindNextRequest } from '../src/memory/reminderTracker.js';
import { historyModeMachine, type ModeAnnouncement } from './historyModeMachine.js';
import { turnMachine, type TurnOutput } from './turnMachine.js';

export type * from './sessionTypes.js';
import type { QueuedPrompt, SessionInput, AcceptInput, AcceptOutput, SaveInput, SaveOutput, PersistModeInput } from './sessionTypes.js';

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
}

export type SessionMachineEvent =
  | { type: 'prompt'; prompt: QueuedPrompt }
  | { type: 'abort' }
  | { type: 'mode.set'; mode: HistoryMode | 'auto' }
  | { type: 'memory.written'; health: MemoryHealth }
  /** The history was compacted outside a turn: the next request reminds the model. */
  | { type: 'history.compacted' }
  | ({ type: 'mode.announced' } & Omit<ModeAnnouncement, 'type'>)
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
  },
  guards: {
    hasQueued: ({ context }) => context.queue.length > 0,
    abortRequested: ({ context }) => context.abortRequested,
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
    'history.compacted': { actions: assign({ tracker: ({ context }) => remindNextRequest(context.tracker) }) },
  },
  initial: 'idle',
  states: {
    idle: {
      always: { guard: 'hasQueued', target: 'accepting' },
    },
    accepting: {
      entry: [
        assign(({ context }) => ({
          current: context.queue[0]!,
          queue: context.queue.slice(1),
          turn: context.turn + 1,
          abortRequested: false,
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
        'mode.announced': { actions: ['takeMode', sendTo('turn', ({ event }) => ({ type: 'mode.changed' as const, mode: event.mode }))] },
      },
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({
          statics: context.statics,
          turn: context.turn,
          history: context.history,
          mode: context.mode,
          tracker: context.tracker,
          calibration: context.calibration,
          base: context.base,
          tailHint: context.tailHint,
          window: context.window,
        }),
        onDone: {
          target: 'saving',
          actions: assign(({ event }) => ({
            last: event.output,
            history: event.output.history,
            tracker: event.output.tracker,
            calibration: event.output.calibration,
            base: event.output.base,
            tailHint: event.output.tailHint,
            window: event.output.window,
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
        onDone: {
          target: 'idle',
          actions: [assign({ history: ({ event }) => event.output.history }), 'reportTurnEnd'],
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
                  message: `the session state was not saved: ${errorMessage(event.error)}. The conversation is in messages.jsonl; the state is rebuilt from it when the session is opened again.`,
                  retryable: false,
                },
                fatal: false,
              }),
            },
            'reportTurnEnd',
          ],
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

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
