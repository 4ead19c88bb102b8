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
import {
  autoCompactionTier,
  beyondHorizon,
  carriedRange,
  compactionBudget,
  overThreshold,
  tokensBeforeCompaction,
} from '../src/compaction/policy.js';
import type { CompactionReason, SessionEvent, TokenUsage, TurnStatus } from '../src/events.js';
import type { HistoryMode } from '../src/history/historyView.js';
import { jitterOf, sumUsage, toTurnError, type TurnError } from '../src/llm/llm.js';
import type { ToolCall } from '../src/history/messages.js';
import { buildPrompt, promptBase, type BuiltPrompt, type PromptBase } from '../src/prompt/promptBuilder.js';
import { checkRound, markUpdated, remindNextRequest, type ReminderDue } from '../src/memory/reminderTracker.js';
import { memoryPlacement, retryDelay } from '../src/settings/settings.js';
import { baseChanged, nextWindow } from '../src/history/recentWindow.js';
import type { MemorySnapshot } from '../src/memory/memoryRules.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';

// The compaction policy's constants, still importable from here.
export { AUTO_KEEP_TOOL_OUTPUTS, TAIL_ALLOWANCE } from '../src/compaction/policy.js';

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
}

export type TurnEvent = { type: 'abort' } | { type: 'mode.changed'; mode: HistoryMode };

function notProvided(name: string): never {
  throw new Error(`turn machine: actor '${name}' was not provided (use turnMachine.provide({ actors: { ${name} } }))`);
}

/**
 * The server's prompt count minus ours corrects the next estimates. A count no tokenizer
 * could give for this prompt (a broken or corrupted server) keeps the old correction.
 */
function calibrationFrom(usage: LlmOutput['usage'], counted: number, previous: number): number {
  if (!usage || !Number.isFinite(usage.promptTokens)) return previous;
  const plausible = usage.promptTokens >= counted / 4 && usage.promptTokens <= counted * 4 + 2000;
  return plausible ? Math.round(usage.promptTokens - counted) : previous;
}

/** The turn's usage so far plus one request's, when the server reported it. */
function addUsage(sum: TokenUsage | null, usage: LlmOutput['usage']): TokenUsage | null {
  if (!usage) return sum;
  return sumUsage(sum, { input: usage.promptTokens, cached: usage.cachedPromptTokens ?? 0, output: usage.completionTokens });
}

/**
 * The request's system message and memory block. A new memory version, other remembered
 * items, a new day (the reminder's file name) or, with 'by-phase', another mode make a new one.
 */
function baseFor(context: TurnContext, memory: MemorySnapshot): PromptBase {
  const placement = memoryPlacement(context.statics.settings.memoryPosition, context.mode);
  const base = context.base;
  if (
    base?.memoryVersion === memory.version &&
    base.relevant === (memory.relevant ?? '') &&
    base.today === memory.today &&
    (base.memoryPosition ?? 'before-history') === placement
  )
    return base;
  return promptBase(context.statics.systemPrompt, memory, context.statics.tools, context.statics.counter, placement);
}

/** Phase 2's window for the next request: held while the base stays (baseFor keeps it when nothing changed; recentWindow.ts). */
function windowFor(context: TurnContext, base: PromptBase): TurnContext['window'] {
  if (context.mode !== 'phase2') return null;
  return nextWindow(context.window, context.turn, baseChanged(base, context.base, context.window), context.statics.settings);
}

/**
 * The next request as it will be sent, tail included. Decisions are taken on it (the
 * percentage the model is shown), and it is sent unless a compaction changes the history.
 */
function requestFor(context: TurnContext, reminder: ReminderDue | null): BuiltPrompt {
  return buildPrompt({
    base: context.base!,
    tools: context.statics.tools,
    history: context.history,
    range: carriedRange(context),
    calibration: context.calibration,
    tailHint: context.prompt?.tokens.tail ?? context.tailHint ?? 0,
    window: context.statics.settings.contextWindow,
    reminder,
    language: context.statics.settings.language,
    counter: context.statics.counter,
  });
}

/**
 * The reminder is decided on the request without one: a token reminder is then due
 * exactly when the percentage shown is over the threshold, since adding it only raises
 * the percentage. The reminder names the percentage of the request that carries it.
 */
function requestWithReminder(context: TurnContext): { prompt: BuiltPrompt; tracker: TurnContext['tracker']; reminder: ReminderDue | null } {
  const plain = requestFor(context, null);
  const { state, due } = checkRound(context.tracker, plain.meta.tokens_percent, context.statics.settings.reminder);
  if (!due) return { prompt: plain, tracker: state, reminder: null };
  const prompt = requestFor(context, due);
  const reminder = { ...due, tokensPercent: prompt.meta.tokens_percent };
  return { prompt: { ...prompt, reminder }, tracker: state, reminder };
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
    takeResponse: assign(({ context, event }) => {
      // Only ever attached to the llm invoke's onDone, whose event carries the actor output.
      const output = (event as unknown as { output: LlmOutput }).output;
      return {
        history: output.history,
        text: output.message.content ?? '',
        toolCalls: output.message.tool_calls ?? [],
        calibration: calibrationFrom(output.usage, context.prompt!.tokens.counted, context.calibration),
        usage: addUsage(context.usage, output.usage),
        error: null,
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
    responseHasToolCalls: ({ event }) => ((event as unknown as { output?: LlmOutput }).output?.message.tool_calls?.length ?? 0) > 0,
    overflowNotYetRetried: ({ context, event }) =>
      !context.overflowRetried && toTurnError((event as { error?: unknown }).error).kind === 'overflow',
    retryable: ({ context, event }) =>
      toTurnError((event as { error?: unknown }).error).retryable && context.retries < context.statics.settings.retry.maxRetries,
    requestLimitReached: ({ context }) => context.request >= context.statics.settings.maxRequestsPerTurn,
    autoCompactionDue: ({ context }) => autoCompactionTier(context) !== null,
    beyondHorizon: ({ context }) => beyondHorizon(context),
  },
  delays: {
    retryBackoff: ({ context }) => context.retryDelayMs,
  },
}).createMachine({
  id: 'turn',
  context: ({ input }) => ({
    ...input,
    request: 0,
    memory: null,
    reminder: null,
    prompt: null,
    toolCalls: [],
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
    usage: null,
  }),
  initial: 'loadMemory',
  on: {
    abort: { target: '.aborted' },
    'mode.changed': { actions: assign({ mode: ({ event }) => event.mode }) },
  },
  states: {
    loadMemory: {
      invoke: {
        id: 'memoryStore',
        src: 'memoryStore',
        input: ({ context }) => ({ tracker: context.tracker, host: context.statics.host }),
        onDone: {
          target: 'checkReminder',
          actions: [
            assign(({ context, event }) => {
              const base = baseFor(context, event.output);
              return { memory: event.output, base, window: windowFor(context, base) };
            }),
            {
              type: 'report',
              params: ({ context }) => ({
                type: 'memory_loaded',
                turn: context.turn,
                request: context.request + 1,
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
    checkReminder: {
      entry: [
        assign(({ context }) => {
          const { prompt, tracker, reminder } = requestWithReminder(context);
          return {
            request: context.request + 1,
            tracker,
            reminder,
            prompt,
            compactedThisRequest: false,
            overflowRetried: false,
            retries: 0,
          };
        }),
        enqueueActions(({ context, enqueue }) => {
          const due = context.reminder;
          if (due) enqueue({ type: 'report', params: { type: 'reminder', turn: context.turn, request: context.request, ...due } });
        }),
      ],
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
      entry: {
        type: 'report',
        params: ({ context }) => ({
          type: 'compaction_start',
          turn: context.turn,
          request: context.request,
          reason: context.compactReason,
          tokensBefore: tokensBeforeCompaction(context, context.compactReason),
        }),
      },
      invoke: {
        id: 'compactor',
        src: 'compactor',
        input: ({ context }) => {
          const { range, budget, fixedTokens } = compactionBudget(context, context.compactReason);
          return {
            history: context.history,
            range,
            turn: context.turn,
            request: context.request,
            reason: context.compactReason,
            budget,
            fixedTokens,
            target: context.compactTarget,
            keepRecentTurns: context.statics.settings.keepRecentTurns,
            host: context.statics.host,
          };
        },
        onDone: {
          target: 'maybeCompact',
          actions: [
            assign(({ context, event }) => ({
              history: event.output.history,
              compactedThisRequest: true,
              // The model saw none of what the horizon archives: nothing to remind it of.
              tracker:
                event.output.replaced > 0 && context.compactReason !== 'horizon' ? remindNextRequest(context.tracker) : context.tracker,
            })),
            {
              type: 'report',
              params: ({ context, event }) => ({
                type: 'compaction_end',
                turn: context.turn,
                request: context.request,
                reason: context.compactReason,
                tokensBefore: event.output.tokensBefore,
                tokensAfter: event.output.tokensAfter,
                replaced: event.output.replaced,
                files: event.output.files,
              }),
            },
          ],
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
        assign(({ context }) => {
          if (!context.compactedThisRequest) return {};
          const base = baseFor(context, context.memory!);
          const window = windowFor(context, base);
          return { base, window, prompt: requestFor({ ...context, base, window }, context.reminder) };
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
            guard: 'responseHasToolCalls',
            target: 'runTools',
            actions: 'takeResponse',
          },
          { target: 'done', actions: 'takeResponse' },
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
        }),
        onDone: {
          target: 'markUpdated',
          actions: assign(({ context, event }) => ({
            history: event.output.history,
            overviewWrite: event.output.overviewWrite,
            tracker: event.output.compacted ? remindNextRequest(context.tracker) : context.tracker,
            toolCalls: [],
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
    done: { type: 'final', entry: assign({ status: 'done' as const }) },
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
  }),
});
