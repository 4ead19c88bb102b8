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
import { autoCompactionTier, beyondHorizon, compactionOrder, overThreshold } from '../src/compaction/policy.js';
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
import { markUpdated, remindNextRequest, type ReminderDue } from '../src/memory/reminderTracker.js';
import { retryDelay } from '../src/settings/settings.js';
import type { MemorySnapshot } from '../src/memory/memoryRules.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';

export type * from './turnTypes.js';
import type {
  TurnStatics,
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

export interface TurnContext extends Omit<TurnInput, 'statics'> {
  statics: TurnStatics;
  request: number;
  memory: MemorySnapshot | null;
  reminder: ReminderDue | null;
  prompt: BuiltPrompt | null;
  toolCalls: ToolCall[];
  overviewWrite: OverviewWrite | null;
  compactedThisRequest: boolean;
  compactReason: CompactionReason;
  compactTarget: CompactionTarget | null;
  overflowRetried: boolean;
  retries: number;
  retryDelayMs: number;
  text: string;
  status: TurnStatus | 'running';
  error: TurnError | null;
  usage: TokenUsage | null;
  results: ToolResult[];
}

export type TurnEvent = { type: 'abort' } | { type: 'mode.changed'; mode: HistoryMode };

/** What the next request is made from: the context's own fields, with the base and window just decided. */
function requestState(context: TurnContext, base: PromptBase, window: RecentWindow | null): RequestState {
  const { statics, turn, history, mode, tracker, calibration, prompt, tailHint } = context;
  return { statics, turn, history, mode, tracker, calibration, base, window, prompt, ...(tailHint === undefined ? {} : { tailHint }) };
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
      // The optional field last: an object spread followed by fields gets a hidden class of its own every time (V8 11).
      return {
        history: output.history,
        text: output.message.content ?? '',
        toolCalls: output.message.tool_calls ?? [],
        calibration: calibrationFrom(output.usage, context.prompt!.tokens.counted, context.calibration),
        usage: addUsage(context.usage, output.usage),
        error: null,
        ...(params.done ? { status: 'done' as const } : {}),
      };
    }),
    /** Everything observable leaves through here; a parent machine overrides it to forward. */
    report: emit((_, event: SessionEvent) => event),
    /** The model wrote overview.md; the session machine overrides this to tell its historyMode. */
    memoryWritten: (_, _params: { health: MemoryHealth }) => {},
  },
  guards: {
    overThreshold: ({ context }) => overThreshold(context),
    exceedsWindow: ({ context }) =>
      context.prompt!.tokens.total + context.statics.settings.reserveOutputTokens > context.statics.settings.contextWindow,
    toolCallsToRun: ({ context, event }) =>
      context.hostLoop !== true && ((event as unknown as { output?: LlmOutput }).output?.message.tool_calls?.length ?? 0) > 0,
    overflowNotYetRetried: ({ context, event }) =>
      !context.overflowRetried && toTurnError((event as { error?: unknown }).error).kind === 'overflow',
    retryable: ({ context, event }) =>
      toTurnError((event as { error?: unknown }).error).retryable && context.retries < context.statics.settings.retry.maxRetries,
    requestLimitReached: ({ context }) => context.request >= context.statics.settings.maxRequestsPerTurn,
    /** A host's loop: it calls the model again and runs its own tools. */
    hostLoop: ({ context }) => context.hostLoop === true,
    toolsGiven: ({ context }) => context.toolCalls.length > 0,
    autoCompactionDue: ({ context }) => autoCompactionTier(context) !== null,
    beyondHorizon: ({ context }) => beyondHorizon(context),
  },
  delays: {
    retryBackoff: ({ context }) => context.retryDelayMs,
  },
}).createMachine({
  id: 'turn',
  // Written out, not `...input` and then the rest: V8 makes fresh hidden classes for the fields
  // added after a spread, ~13 KB per turn.
  context: ({ input }) => ({
    statics: input.statics,
    turn: input.turn,
    history: input.history,
    mode: input.mode,
    tracker: input.tracker,
    calibration: input.calibration,
    base: input.base,
    ...(input.tailHint === undefined ? {} : { tailHint: input.tailHint }),
    ...(input.window === undefined ? {} : { window: input.window }),
    ...(input.hostLoop === undefined ? {} : { hostLoop: input.hostLoop }),
    ...(input.calls === undefined ? {} : { calls: input.calls }),
    request: input.request ?? 0,
    memory: null,
    reminder: null,
    prompt: null,
    toolCalls: input.calls ?? [],
    overviewWrite: null,
    compactedThisRequest: false,
    compactReason: 'fallback',
    compactTarget: null,
    overflowRetried: false,
    retries: 0,
    retryDelayMs: 0,
    text: '',
    status: 'running',
    error: null,
    usage: input.usage ?? null,
    results: [],
  }),
  initial: 'start',
  on: {
    abort: { target: '.aborted' },
    'mode.changed': { actions: assign({ mode: ({ event }) => event.mode }) },
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
              const { prompt, tracker, reminder } = requestWithReminder(requestState(context, base, window));
              return {
                memory: event.output,
                base,
                window,
                request: context.request + 1,
                tracker,
                reminder,
                prompt,
                compactedThisRequest: false,
                overflowRetried: false,
                retries: 0,
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
      entry: enqueueActions(({ context, enqueue }) => {
        const due = context.reminder;
        if (due) enqueue({ type: 'report', params: { type: 'reminder', turn: context.turn, request: context.request, ...due } });
      }),
      always: 'maybeCompact',
    },
    maybeCompact: {
      always: [
        { guard: 'overThreshold', target: 'compacting', actions: assign({ compactReason: 'fallback' as const, compactTarget: null }) },
        {
          guard: 'autoCompactionDue',
          target: 'compacting',
          actions: assign(({ context }) => ({ compactReason: 'auto' as const, compactTarget: autoCompactionTier(context) })),
        },
        { guard: 'beyondHorizon', target: 'compacting', actions: assign({ compactReason: 'horizon' as const, compactTarget: null }) },
        { target: 'buildPrompt' },
      ],
    },
    compacting: {
      // The compactor reports the compaction itself (compaction_start, compaction_end: src/compaction/compact.ts).
      invoke: {
        id: 'compactor',
        src: 'compactor',
        input: ({ context }) => ({
          order: compactionOrder(context, context.compactReason, context.compactTarget),
          request: context.request,
          host: context.statics.host,
        }),
        onDone: {
          target: 'maybeCompact',
          actions: assign(({ context, event }) => ({
            history: event.output.history,
            compactedThisRequest: true,
            // The model saw none of what the horizon archives: nothing to remind it of.
            tracker:
              event.output.replaced > 0 && context.compactReason !== 'horizon' ? remindNextRequest(context.tracker) : context.tracker,
          })),
        },
        onError: {
          // A failed compaction is not fatal: the request may still fit; buildPrompt checks the window.
          target: 'buildPrompt',
          actions: [
            assign({ compactedThisRequest: true }),
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
      entry: [
        // Built in checkReminder; built again only if a compaction ran (or was tried) since. The
        // mode may have changed while the compactor ran: the memory's placement and the window follow it.
        enqueueActions(({ context, enqueue }) => {
          // No assign otherwise: each one copies the whole context.
          if (!context.compactedThisRequest) return;
          const base = baseFor(context, context.memory!);
          const window = windowFor(context, base);
          enqueue.assign({ base, window, prompt: requestFor({ ...context, base, window }, context.reminder) });
        }),
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
            actions: assign({
              overflowRetried: true,
              compactReason: 'overflow' as const,
              compactTarget: null,
              compactedThisRequest: false,
            }),
          },
          {
            guard: 'retryable',
            target: 'retryWait',
            actions: [
              assign(({ context, event }) => {
                const error = toTurnError(event.error);
                const attempt = context.retries + 1;
                return {
                  retries: attempt,
                  retryDelayMs: retryDelay(context.statics.settings.retry, attempt, error.retryAfterMs, jitterOf(event.error)),
                  error,
                };
              }),
              {
                type: 'report',
                params: ({ context }) => ({
                  type: 'retry',
                  turn: context.turn,
                  request: context.request,
                  attempt: context.retries,
                  delayMs: context.retryDelayMs,
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
          calls: context.toolCalls,
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
            overviewWrite: event.output.overviewWrite,
            tracker: event.output.compacted ? remindNextRequest(context.tracker) : context.tracker,
            toolCalls: [],
            results: event.output.results,
          })),
        },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => toTurnError(event.error, 'tool') }) },
      },
    },
    markUpdated: {
      entry: enqueueActions(({ context, enqueue }) => {
        const write = context.overviewWrite;
        if (!write) return;
        enqueue.assign({ tracker: markUpdated(context.tracker, write.at), overviewWrite: null });
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
        { guard: 'hostLoop', target: 'done' },
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
    done: {
      type: 'final',
      entry: enqueueActions(({ context, enqueue }) => {
        if (context.status !== 'done') enqueue.assign({ status: 'done' as const });
      }),
    },
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
    text: context.text,
    error: context.error,
    requests: context.request,
    history: context.history,
    tracker: context.tracker,
    calibration: context.calibration,
    base: context.base,
    tailHint: context.prompt?.tokens.tail ?? context.tailHint ?? 0,
    window: context.window ?? null,
    ...(context.usage ? { usage: context.usage } : {}),
    toolCalls: context.toolCalls.length,
    results: context.results,
  }),
});
