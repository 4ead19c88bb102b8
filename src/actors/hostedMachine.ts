/**
 * The session machine with its actors provided once for every session: providing per
 * session would build a new tree of state nodes each time (kilobytes per idle session).
 * Each actor does its work through the host its input carries.
 */
import { fromPromise } from 'xstate';
import {
  childTurn,
  sessionMachine,
  type AcceptInput,
  type AcceptOutput,
  type AcceptCallInput,
  type AcceptCallOutput,
  type BackgroundSummaryInput,
  type PersistModeInput,
  type SaveInput,
  type SaveOutput,
  type SessionHost,
} from '../../machines/sessionMachine.js';
import type {
  CompactorInput,
  CompactorOutput,
  LlmInput,
  LlmOutput,
  MemoryStoreInput,
  ToolRunnerInput,
  ToolRunnerOutput,
  TurnHost,
} from '../../machines/turnMachine.js';
import type { MemorySnapshot } from '../memory/memoryRules.js';
import type { PreparedSummary } from '../compaction/prepared.js';
import type { SessionEvent } from '../events.js';

function hostIn<H extends TurnHost>(input: { host?: H }): H {
  if (!input.host) throw new Error('workmem: an actor ran without its session host (statics.host)');
  return input.host;
}

let hosted: typeof sessionMachine | null = null;

/** One compactor for the turn's compactions and the session's (the user's, between turns). */
const compactor = fromPromise<CompactorOutput, CompactorInput>(({ input, signal }) => hostIn(input).compact(input, signal));

export function hostedSessionMachine(): typeof sessionMachine {
  hosted ??= sessionMachine.provide({
    actors: {
      turn: childTurn.provide({
        // The turn's events go straight to the session's listeners (the host's report), not through the session machine.
        actions: {
          report: (({ context }: { context: { statics: { host?: TurnHost } } }, event: SessionEvent) =>
            hostIn(context.statics).report!(event)) as never,
        },
        actors: {
          memoryStore: fromPromise<MemorySnapshot, MemoryStoreInput>(({ input }) => hostIn(input).loadMemory(input)),
          llm: fromPromise<LlmOutput, LlmInput>(({ input, signal }) => hostIn(input).request(input, signal)),
          toolRunner: fromPromise<ToolRunnerOutput, ToolRunnerInput>(({ input, signal }) => hostIn(input).runTools(input, signal)),
          compactor,
        },
      }),
      accept: fromPromise<AcceptOutput, AcceptInput>(({ input }) => hostIn<SessionHost>(input).accept(input)),
      save: fromPromise<SaveOutput, SaveInput>(({ input }) => hostIn<SessionHost>(input).save(input)),
      persistMode: fromPromise<void, PersistModeInput>(({ input }) => hostIn<SessionHost>(input).persistMode(input)),
      acceptCall: fromPromise<AcceptCallOutput, AcceptCallInput>(({ input }) => hostIn<SessionHost>(input).acceptCall(input)),
      backgroundSummary: fromPromise<PreparedSummary, BackgroundSummaryInput>(({ input, signal }) =>
        hostIn<SessionHost>(input).summarize(input, signal),
      ),
      compactor,
    },
  });
  return hosted;
}
