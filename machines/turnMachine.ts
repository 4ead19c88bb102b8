/**
 * One user message → one finished answer. Each pass loadMemory → checkReminder →
 * maybeCompact → buildPrompt → stream is one LLM request; tool calls loop back through
 * runTools → markUpdated. The compaction check runs before every request, also inside
 * long tool loops. Pure: memoryStore, compactor, llm and toolRunner are provided by src/;
 * when and how far to compact is decided by src/compaction/policy.ts.
 *
 * Over 350 lines: it is one statechart (twelve states and their transitions, each with
 * the events it reports), read and visualised whole; its types are in turnTypes.ts.
 */
import { assign, emit, enqueueActions, fromPromise, setup } from 'xstate';
import type { CompactionTarget } from '../src/compaction/plan.js';
import { autoCompactionTier, beyondHorizon, compactionOrder, overThreshold, preparedDue } from '../src/compaction/policy.js';
import type { PreparedSummary } from '../src/compaction/prepared.js';
import type { CompactionReason, SessionEvent, TokenUsage, TurnStatus } from '../src/events.js';
import type { HistoryMode } from '../src/history/historyView.js';
import type { TurnError } from '../src/events.js';
import { jitterOf, toTurnError } from './turnErrors.js';
import type { ToolCall } from '../src/history/messages.js';
import type { BuiltPrompt, PromptBase } from '../src/prompt/promptBuilder.js';
import type { RecentWindow } from '../src/history/recentWindow.js';
import {
  addUsage,
  baseFor,
  calibrationFrom,
  requestFor,
  requestWithReminder,
  windowFor,
  type RequestState,
} from '../src/prompt/requestPlan.js';
import { markUpdated, remindNextRequest } from '../src/memory/reminderTracker.js';
import { retryDelay } from '../src/settings/settings.js';
import type { MemorySnapshot } from '../src/memory/memoryRules.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';

export type * from './turnTypes.js';
import type {
  TurnInput,
  TurnOutput,
  CompactorInput,
  CompactorOutput,
  LlmInput,
  LlmOutput,
  ToolRunnerInput,
  OverviewWrite,
  ToolRunnerOutput,
  MemoryStoreInput,
  ToolResult,
} from './turnTypes.js';

/**
 * What a turn holds. Kept to few top-level fields: xstate copies the context field by field
 * on every assign, and V8 (11) keeps an object copied so with 20 fields or more as a
 * dictionary, slower to read and several times larger. The request's details are grouped.
 */
export interface TurnContext extends Pick<TurnInput, 'statics' | 'turn' | 'history' | 'mode' | 'tracker' | 'calibration' | 'base'> {
  /** Phase 2's window (see TurnInput), null in other modes. */
  window: RecentWindow | null;
  /** The last request's tail tokens, until this turn builds its first request (see TurnInput). */
  tailHint: number;
  /** A pass of a host's own loop (see TurnInput). */
  hostLoop: boolean;
  /** The request in progress, from 1 (a host loop's earlier passes counted). */
  request: number;
  /** The memory and the prompt of the request in progress (the prompt carries its reminder, if one is due). */
  memory: MemorySnapshot | null;
  prompt: BuiltPrompt | null;
  compaction: TurnCompaction;
  attempt: TurnAttempt;
  answer: TurnAnswer;
  /** 'running' until a final state; the error a failed turn ends with, or the retryable one being retried. */
  status: TurnStatus | 'running';
  error: TurnError | null;
}

/** The compaction before the request in progress (at most one a request), and the summary prepared for it in the background. */
export interface TurnCompaction {
  /** One ran, or was tried, before this request. */
  ran: boolean;
  /** Why the next one runs, and the auto policy's tier for it (null: a budget). */
  reason: CompactionReason;
  target: CompactionTarget | null;
  /** The summary the session prepared in the background, and whether this turn swapped it in (kept from request to request). */
  background: TurnBackground;
}

/** A summary prepared in the background, until the fallback swaps it in (then `used`). */
export interface TurnBackground {
  ready: PreparedSummary | null;
  used: boolean;
}

/** The model calls made for the request in progress. */
export interface TurnAttempt {
  /** Retries after retryable errors so far, and the wait before the next one. */
  retries: number;
  delayMs: number;
  /** A context-overflow error was answered with a compaction already (once a request). */
  overflowRetried: boolean;
}

/** What the model answered and what its tools did, so far in the turn. */
export interface TurnAnswer {
  text: string;
  /** The last answer's tool calls not yet run. */
  toolCalls: ToolCall[];
  /** The server's token counts, summed over the turn's requests. */
  usage: TokenUsage | null;
  /** A host loop's tools pass: each call's result. */
  results: ToolResult[];
  /** overview.md written by the last tool run, until markUpdated takes it. */
  overviewWrite: OverviewWrite | null;
}

export type TurnEvent =
  | { type: 'abort' }
  | { type: 'mode.changed'; mode: HistoryMode }
  /** The session's background summary became ready while this turn runs. */
  | { type: 'summary.ready'; prepared: PreparedSummary };

/** What the next request is made from: the context's own fields, with the base and window just decided. */
function requestState(context: TurnContext, base: PromptBase, window: RecentWindow | null): RequestState {
  const { statics, turn, history, mode, tracker, calibration, prompt, tailHint } = context;
  return { statics, turn, history, mode, tracker, calibration, base, window, prompt, tailHint };
}

const NO_BACKGROUND: TurnBackground = { ready: null, used: false };
const SWAPPED_IN: TurnBackground = { ready: null, used: true };
/** A request opens with no compaction run and no retry made. */
const NO_COMPACTION: TurnCompaction = { ran: false, reason: 'fallback', target: null, background: NO_BACKGROUND };
const FIRST_ATTEMPT: TurnAttempt = { retries: 0, delayMs: 0, overflowRetried: false };

/** The next request's: none run yet, the background summary kept (the constant while there is none). */
function nextRequest(compaction: TurnCompaction): TurnCompaction {
  return compaction.background === NO_BACKGROUND ? NO_COMPACTION : compactionFor(compaction, 'fallback');
}

function compactionFor(
  compaction: TurnCompaction,
  reason: CompactionReason,
  target: CompactionTarget | null = null,
  background: TurnBackground = compaction.background,
): TurnCompaction {
  return { ran: false, reason, target, background };
}

function ranAlready(compaction: TurnCompaction): TurnCompaction {
  return { ran: true, reason: compaction.reason, target: compaction.target, background: compaction.background };
}

function notProvided(name: string): never {
  throw new Error(`turn machine: actor '${name}' was not provided (use turnMachine.provide({ actors: { ${name} } }))`);
}

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    input: {} as TurnInput,
    output: {} as TurnOutput,
    events: {} as TurnEvent,
    emitted: {} as SessionEvent,
  },
  actors: {
    memoryStore: fromPromise<MemorySnapshot, MemoryStoreInput>(async () => notProvided('memoryStore')),
    compactor: fromPromise<CompactorOutput, CompactorInput>(async () => notProvided('compactor')),
    llm: fromPromise<LlmOutput, LlmInput>(async () => notProvided('llm')),
    toolRunner: fromPromise<ToolRunnerOutput, ToolRunnerInput>(async () => notProvided('toolRunner')),
  },
  actions: {
    /** `done`: the turn ends with this answer (status set here, so that entering `done` copies no context again). */
    takeResponse: assign(({ context, event }, params: { done: boolean }) => {
      // Only ever attached to the llm invoke's onDone, whose event carries the actor output.
      const output = (event as unknown as { output: LlmOutput }).output;
      const { answer } = context;
      // The optional field last: an object spread followed by fields gets a hidden class of its own every time (V8 11).
      return {
        history: output.history,
        answer: {
          text: output.message.content ?? '',
          toolCalls: output.message.tool_calls ?? [],
          usage: addUsage(answer.usage, output.usage),
          results: answer.results,
          overviewWrite: answer.overviewWrite,
        },
        calibration: calibrationFrom(output.usage, context.prompt!.tokens.counted, context.calibration),
        error: null,
        ...(params.done ? { status: 'done' as const } : {}),
      };
    }),
    /**
     * The request built again after a compaction ran or was tried: the history changed, and the
     * mode may have while the compactor ran (the memory's placement and the window follow it).
     */
    rebuildPrompt: assign(({ context }) => {
      const base = baseFor(context, context.memory!);
      const window = windowFor(context, base);
      return { base, window, prompt: requestFor(requestState(context, base, window), context.prompt!.reminder) };
    }),
    /** Everything observable leaves through here; a parent machine overrides it to forward. */
    report: emit((_, event: SessionEvent) => event),
    /** The model wrote overview.md; the session machine overrides this to tell its historyMode. */
    memoryWritten: (_, _params: { health: MemoryHealth }) => {},
  },
  guards: {
    overThreshold: ({ context }) => overThreshold(context),
    preparedDue: ({ context }) => preparedDue(context),
    swappingPrepared: ({ context }) => context.compaction.reason === 'background',
    exceedsWindow: ({ context }) =>
      context.prompt!.tokens.total + context.statics.settings.reserveOutputTokens > context.statics.settings.contextWindow,
    toolCallsToRun: ({ context, event }) =>
      !context.hostLoop && ((event as unknown as { output?: LlmOutput }).output?.message.tool_calls?.length ?? 0) > 0,
    overflowNotYetRetried: ({ context, event }) =>
      !context.attempt.overflowRetried && toTurnError((event as { error?: unknown }).error).kind === 'overflow',
    retryable: ({ context, event }) =>
      toTurnError((event as { error?: unknown }).error).retryable && context.attempt.retries < context.statics.settings.retry.maxRetries,
    requestLimitReached: ({ context }) => context.request >= context.statics.settings.maxRequestsPerTurn,
    /** A host's loop: it calls the model again and runs its own tools. */
    hostLoop: ({ context }) => context.hostLoop,
    toolsGiven: ({ context }) => context.answer.toolCalls.length > 0,
    reminderDue: ({ context }) => context.prompt!.reminder !== null,
    compactionRan: ({ context }) => context.compaction.ran,
    autoCompactionDue: ({ context }) => autoCompactionTier(context) !== null,
    beyondHorizon: ({ context }) => beyondHorizon(context),
  },
  delays: {
    retryBackoff: ({ context }) => context.attempt.delayMs,
  },
}).createMachine({
  id: 'turn',
  // Every field written out, none spread in: V8 makes fresh hidden classes for the fields
  // added after a spread (~13 KB per turn), and a literal with spreads becomes a dictionary.
  context: ({ input }) => ({
    statics: input.statics,
    turn: input.turn,
    history: input.history,
    mode: input.mode,
    tracker: input.tracker,
    calibration: input.calibration,
    base: input.base,
    window: input.window ?? null,
    tailHint: input.tailHint ?? 0,
    hostLoop: input.hostLoop === true,
    request: input.request ?? 0,
    memory: null,
    prompt: null,
    compaction: input.prepared ? compactionFor(NO_COMPACTION, 'fallback', null, { ready: input.prepared, used: false }) : NO_COMPACTION,
    attempt: FIRST_ATTEMPT,
    answer: { text: '', toolCalls: input.calls ?? [], usage: input.usage ?? null, results: [], overviewWrite: null },
    status: 'running',
    error: null,
  }),
  initial: 'start',
  on: {
    abort: { target: '.aborted' },
    'mode.changed': { actions: assign({ mode: ({ event }) => event.mode }) },
    'summary.ready': {
      actions: assign({
        compaction: ({ context, event }) => {
          const { ran, reason, target, background } = context.compaction;
          return { ran, reason, target, background: { ready: event.prepared, used: background.used } };
        },
      }),
    },
  },
  states: {
    // A turn opens with a request; a host loop's tools pass with the tools it was given.
    start: {
      always: [{ guard: 'toolsGiven', target: 'runTools' }, { target: 'loadMemory' }],
    },
    loadMemory: {
      invoke: {
        id: 'memoryStore',
        src: 'memoryStore',
        input: ({ context }) => ({ tracker: context.tracker, host: context.statics.host }),
        onDone: {
          target: 'checkReminder',
          actions: [
            // The request this memory opens, decided at once (one copy of the context, not two): checkReminder reports it.
            assign(({ context, event }) => {
              const base = baseFor(context, event.output);
              const window = windowFor(context, base);
              const { prompt, tracker } = requestWithReminder(requestState(context, base, window));
              return {
                memory: event.output,
                base,
                window,
                request: context.request + 1,
                tracker,
                prompt,
                compaction: nextRequest(context.compaction),
                attempt: FIRST_ATTEMPT,
              };
            }),
            {
              type: 'report',
              params: ({ context }) => ({
                type: 'memory_loaded',
                turn: context.turn,
                request: context.request,
                version: context.memory!.version,
                bytes: context.memory!.bytes,
                detailFiles: context.memory!.detail.length,
              }),
            },
          ],
        },
        onError: {
          target: 'failed',
          actions: assign({ error: ({ event }) => toTurnError(event.error, 'memory') }),
        },
      },
    },
    // The request and its reminder were decided on the way in (loadMemory's onDone).
    checkReminder: {
      always: [
        {
          guard: 'reminderDue',
          target: 'maybeCompact',
          actions: {
            type: 'report',
            params: ({ context }) => ({ type: 'reminder', turn: context.turn, request: context.request, ...context.prompt!.reminder! }),
          },
        },
        { target: 'maybeCompact' },
      ],
    },
    maybeCompact: {
      always: [
        // Made already in the background: swapped in at once, no model call.
        {
          guard: 'preparedDue',
          target: 'compacting',
          actions: assign(({ context }) => ({ compaction: compactionFor(context.compaction, 'background') })),
        },
        {
          guard: 'overThreshold',
          target: 'compacting',
          actions: assign(({ context }) => ({ compaction: compactionFor(context.compaction, 'fallback') })),
        },
        {
          guard: 'autoCompactionDue',
          target: 'compacting',
          actions: assign(({ context }) => ({ compaction: compactionFor(context.compaction, 'auto', autoCompactionTier(context)) })),
        },
        {
          guard: 'beyondHorizon',
          target: 'compacting',
          actions: assign(({ context }) => ({ compaction: compactionFor(context.compaction, 'horizon') })),
        },
        { guard: 'compactionRan', target: 'buildPrompt', actions: 'rebuildPrompt' },
        { target: 'buildPrompt' },
      ],
    },
    compacting: {
      // The compactor reports the compaction itself (compaction_start, compaction_end: src/compaction/compact.ts).
      invoke: {
        id: 'compactor',
        src: 'compactor',
        input: ({ context }) => ({
          order: compactionOrder(context, context.compaction.reason, context.compaction.target),
          request: context.request,
          host: context.statics.host,
        }),
        onDone: [
          {
            // The prepared summary is in; the request is built again, and the fallback still runs if it is not enough.
            guard: 'swappingPrepared',
            target: 'maybeCompact',
            actions: [
              assign(({ context, event }) => ({
                history: event.output.history,
                compaction: compactionFor(NO_COMPACTION, 'fallback', null, SWAPPED_IN),
                tracker: event.output.replaced > 0 ? remindNextRequest(context.tracker) : context.tracker,
              })),
              'rebuildPrompt',
            ],
          },
          {
            target: 'maybeCompact',
            actions: assign(({ context, event }) => ({
              history: event.output.history,
              compaction: ranAlready(context.compaction),
              // The model saw none of what the horizon archives: nothing to remind it of.
              tracker:
                event.output.replaced > 0 && context.compaction.reason !== 'horizon' ? remindNextRequest(context.tracker) : context.tracker,
            })),
          },
        ],
        onError: {
          // A failed compaction is not fatal: the request may still fit; buildPrompt checks the window.
          target: 'buildPrompt',
          actions: [
            assign(({ context }) => ({ compaction: ranAlready(context.compaction) })),
            'rebuildPrompt',
            {
              type: 'report',
              params: ({ context, event }) => ({
                type: 'error',
                turn: context.turn,
                request: context.request,
                error: toTurnError(event.error),
                fatal: false,
              }),
            },
          ],
        },
      },
    },
    buildPrompt: {
      // Built on the way into checkReminder, and again on the way here if a compaction ran (rebuildPrompt).
      entry: [
        {
          type: 'report',
          params: ({ context }) => ({
            type: 'prompt_built',
            turn: context.turn,
            request: context.request,
            mode: context.mode,
            messages: context.prompt!.messages.length,
            range: context.prompt!.range,
            ...(context.prompt!.pinned.length ? { pinned: context.prompt!.pinned } : {}),
            tokens: context.prompt!.tokens,
          }),
        },
      ],
      always: [
        {
          guard: 'exceedsWindow',
          target: 'failed',
          actions: assign(({ context }) => ({
            error: {
              kind: 'window' as const,
              retryable: false,
              message:
                `the request needs ${context.prompt!.tokens.total} tokens + ${context.statics.settings.reserveOutputTokens} reserved for the answer, ` +
                `more than the ${context.statics.settings.contextWindow}-token window, and nothing more can be compacted`,
            },
          })),
        },
        { target: 'stream' },
      ],
    },
    stream: {
      invoke: {
        id: 'llm',
        src: 'llm',
        input: ({ context }) => ({
          prompt: context.prompt!,
          turn: context.turn,
          request: context.request,
          maxOutputTokens: context.statics.settings.reserveOutputTokens,
          host: context.statics.host,
        }),
        onDone: [
          {
            guard: 'toolCallsToRun',
            target: 'runTools',
            actions: { type: 'takeResponse', params: { done: false } },
          },
          // No calls, or a host's loop, which runs them itself.
          { target: 'done', actions: { type: 'takeResponse', params: { done: true } } },
        ],
        onError: [
          {
            guard: 'overflowNotYetRetried',
            target: 'compacting',
            actions: assign(({ context }) => ({
              attempt: { retries: context.attempt.retries, delayMs: context.attempt.delayMs, overflowRetried: true },
              compaction: compactionFor(context.compaction, 'overflow'),
            })),
          },
          {
            guard: 'retryable',
            target: 'retryWait',
            actions: [
              assign(({ context, event }) => {
                const error = toTurnError(event.error);
                const retries = context.attempt.retries + 1;
                const delayMs = retryDelay(context.statics.settings.retry, retries, error.retryAfterMs, jitterOf(event.error));
                return { attempt: { retries, delayMs, overflowRetried: context.attempt.overflowRetried }, error };
              }),
              {
                type: 'report',
                params: ({ context }) => ({
                  type: 'retry',
                  turn: context.turn,
                  request: context.request,
                  attempt: context.attempt.retries,
                  delayMs: context.attempt.delayMs,
                  error: context.error!,
                }),
              },
            ],
          },
          { target: 'failed', actions: assign({ error: ({ event }) => toTurnError(event.error) }) },
        ],
      },
    },
    retryWait: {
      after: { retryBackoff: { target: 'stream', actions: assign({ error: null }) } },
    },
    runTools: {
      invoke: {
        id: 'toolRunner',
        src: 'toolRunner',
        input: ({ context }) => ({
          calls: context.answer.toolCalls,
          turn: context.turn,
          request: context.request,
          history: context.history,
          host: context.statics.host,
          ...(context.hostLoop ? { hostLoop: true } : {}),
        }),
        onDone: {
          target: 'markUpdated',
          actions: assign(({ context, event }) => ({
            history: event.output.history,
            answer: {
              text: context.answer.text,
              toolCalls: [],
              usage: context.answer.usage,
              results: event.output.results,
              overviewWrite: event.output.overviewWrite,
            },
            tracker: event.output.compacted ? remindNextRequest(context.tracker) : context.tracker,
          })),
        },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => toTurnError(event.error, 'tool') }) },
      },
    },
    markUpdated: {
      entry: enqueueActions(({ context, enqueue }) => {
        const { answer } = context;
        const write = answer.overviewWrite;
        if (!write) return;
        enqueue.assign({
          tracker: markUpdated(context.tracker, write.at),
          answer: { text: answer.text, toolCalls: answer.toolCalls, usage: answer.usage, results: answer.results, overviewWrite: null },
        });
        enqueue({
          type: 'report',
          params: {
            type: 'memory_updated',
            turn: context.turn,
            request: context.request,
            path: write.path,
            bytes: write.bytes,
            health: write.memory.health,
            ...(write.warning ? { warning: write.warning } : {}),
          },
        });
        enqueue({ type: 'memoryWritten', params: { health: write.memory.health } });
      }),
      always: [
        { guard: 'hostLoop', target: 'done', actions: assign({ status: 'done' as const }) },
        {
          guard: 'requestLimitReached',
          target: 'failed',
          actions: assign(({ context }) => ({
            error: {
              kind: 'internal' as const,
              retryable: false,
              message: `stopped after ${context.request} model requests in one turn (maxRequestsPerTurn)`,
            },
          })),
        },
        { target: 'loadMemory' },
      ],
    },
    // The transitions here set the status (takeResponse with the answer): entering copies no context.
    done: { type: 'final' },
    failed: {
      type: 'final',
      entry: [
        assign({ status: 'failed' as const }),
        {
          type: 'report',
          params: ({ context }) => ({
            type: 'error',
            turn: context.turn,
            request: context.request,
            error: context.error ?? { kind: 'internal', message: 'turn failed', retryable: false },
            fatal: true,
          }),
        },
      ],
    },
    aborted: { type: 'final', entry: assign({ status: 'aborted' as const }) },
  },
  output: ({ context }) => ({
    status: context.status === 'running' ? 'failed' : context.status,
    text: context.answer.text,
    error: context.error,
    requests: context.request,
    history: context.history,
    tracker: context.tracker,
    calibration: context.calibration,
    base: context.base,
    tailHint: context.prompt?.tokens.tail ?? context.tailHint,
    window: context.window,
    ...(context.answer.usage ? { usage: context.answer.usage } : {}),
    toolCalls: context.answer.toolCalls.length,
    results: context.answer.results,
    ...(context.compaction.background.used ? { preparedUsed: true as const } : {}),
  }),
});
