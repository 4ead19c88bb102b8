/**
 * The arms of the eval: each conversation is played under each of them on the same model.
 * Two are workmem through its own door, a Session (auto: phase 1 → 2 with the defaults; and
 * the cache-aware settings), two are the usual peers of peerAgent.ts (full history; summarise
 * all but the last 3 turns at 75 %). An arm's run plays the turns in order and returns the
 * answers, the calls the metered model recorded, and (workmem) the upkeep of its memory.
 */
import { join, relative } from 'node:path';
import { createSession } from '../session/index.js';
import { keepTemporaryHome, removeTemporaryHome, temporaryHome } from '../storage/temporaryHome.js';
import type { SettingsOverrides } from '../settings/config.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { LLM } from '../llm/llm.js';
import { fetchDocumentTool } from './evalTools.js';
import { meteredModel, type CallRecord, type MeteredModel } from './meteredModel.js';
import { peerAgent } from './peerAgent.js';
import type { Conversation } from './suite.js';
import { holdsTextToolCall, UpkeepTracker, type Upkeep } from './upkeep.js';

/** The arms' names, in the order they run and are reported. */
export const ARM_NAMES = ['workmem-auto', 'workmem-cache-aware', 'full-history', 'summarise-75'] as const;
/** One arm's name. */
export type ArmName = (typeof ARM_NAMES)[number];

/** What the report calls each arm. */
export const ARM_LABELS: Record<ArmName, string> = {
  'workmem-auto': 'workmem auto (phase 1 → 2)',
  'workmem-cache-aware': 'workmem, cache-aware settings',
  'full-history': 'peer: full history',
  'summarise-75': 'peer: summarise at 75 %',
};

/** The cache-aware settings (docs/ai-sdk.md): memory by phase, phase 2's window held for 6 turns, the fallback to recent turns. */
export const CACHE_AWARE: SettingsOverrides = { memoryPosition: 'by-phase', recentTurnsStep: 6, fallbackTarget: 'recent-turns' };

/**
 * The seed's layout (docs/design.md §4.1), the default before 2026-12-07: the memory in its
 * place follows every write, phase 2 carries the last 3 turns, moving every turn, and
 * compact_history compacts whatever share of the window the request uses.
 */
export const SEED_LAYOUT: SettingsOverrides = { memoryRefresh: 'every-write', recentTurns: 3, recentTurnsStep: 1, compactHistoryFloor: 0 };

/**
 * The cheap layout (docs/eval.md): the default's, with phase 2's window held for up to 24
 * turns over 3. Cheaper still, but fewer right answers on a model that forgets in long contexts.
 */
export const CHEAP_LAYOUT: SettingsOverrides = { memoryRefresh: 'when-cheap', recentTurns: 3, recentTurnsStep: 24 };

/**
 * The clock of every workmem arm's session: it starts at the same instant for each
 * conversation and arm and moves ten seconds a user turn, so what a session writes (an
 * archive's name, the day a reminder names) is the same whatever ran before it, whenever the
 * eval runs and however loaded the machine is. (A clock moved by its readings was not: how
 * many events a streamed answer raises depends on how its chunks arrive.)
 */
export const EVAL_EPOCH = Date.UTC(2026, 0, 5, 9, 0, 0);
/** How far the eval's clock moves a user turn. */
export const EVAL_TURN_MS = 10_000;

function evalClock(meter: MeteredModel): () => number {
  return () => EVAL_EPOCH + meter.turn * EVAL_TURN_MS;
}

/** The share of the window at which the summarising peer summarises. */
export const SUMMARISE_AT = 0.75;

/** What every arm is told: the same host instructions, before workmem's own for its arms. */
export const EVAL_INSTRUCTIONS =
  'You are a helpful assistant in a long conversation with one user. Answer in one or two sentences. ' +
  'When the user asks about something they told you, give the exact value they said last. ' +
  'If they never told you, say that you do not know; never guess.';

/** One arm's play of one conversation. */
export interface ArmRun {
  /** The answer to each turn ('' for a turn that failed). */
  answers: string[];
  calls: CallRecord[];
  /** null for a peer. */
  upkeep: Upkeep | null;
  /** Summaries a summarising peer made. */
  summaries: number;
  /** A peer's tool calls whose result was an error, and its answers that held a call written as text (workmem's are in `upkeep`). */
  peerTools?: { errors: number; asText: number };
  /** Turns that ended without an answer. */
  failedTurns: number;
  /** Each turn that ended without an answer: its status and error. */
  failures: TurnFailure[];
  /** A workmem arm whose turns failed: its session's folder, kept for the user to open. */
  keptSession?: string;
  wallMs: number;
}

/** A turn that ended without an answer, and why. */
export interface TurnFailure {
  /** The conversation's turn (0-based). */
  turn: number;
  status: string;
  /** The error's kind and text; absent when the turn ended without one. */
  error?: { kind: string; message: string; status?: number };
}

/** What an arm's run needs besides the conversation. */
export interface ArmContext {
  llm: LLM;
  counter: TokenCounter;
  contextWindow: number;
  signal: AbortSignal;
  /** Settings of the workmem arms over the defaults (the cache-aware arm's own go over them). */
  settings?: SettingsOverrides;
  /** Called before each turn is played (0-based); may throw to stop the run. */
  beforeTurn?: (turn: number, calls: readonly CallRecord[]) => void;
}

/** Plays `conversation` under `arm`. */
export async function runArm(arm: ArmName, conversation: Conversation, context: ArmContext): Promise<ArmRun> {
  const started = performance.now();
  const meter = meteredModel(context.llm, context.counter);
  const tools = [fetchDocumentTool(conversation.language)];
  const answers: string[] = [];
  const failures: TurnFailure[] = [];
  let failedTurns = 0;
  if (arm === 'workmem-auto' || arm === 'workmem-cache-aware') {
    // Named by this process, so that a killed eval's homes (its conversations' text) go at the next start.
    const home = temporaryHome('eval');
    const tracker = new UpkeepTracker();
    let sessionDir: string | undefined;
    let keptSession: string | undefined;
    try {
      const session = await createSession({
        llm: meter.llm,
        home,
        cwd: '/eval',
        env: {},
        now: evalClock(meter),
        trace: false,
        name: `eval ${conversation.id} ${arm}`,
        instructions: EVAL_INSTRUCTIONS,
        tools,
        settings: {
          contextWindow: context.contextWindow,
          ...(conversation.language === 'zh' ? { language: 'zh' } : {}),
          ...context.settings,
          ...(arm === 'workmem-cache-aware' ? CACHE_AWARE : {}),
        },
      });
      sessionDir = session.dir;
      session.on('*', tracker.onEvent);
      const stop = (): void => session.abort();
      context.signal.addEventListener('abort', stop);
      try {
        for (const [i, turn] of conversation.turns.entries()) {
          context.beforeTurn?.(i, meter.calls);
          meter.turn = tracker.turn = i;
          const result = await session.prompt(turn.text);
          if (context.signal.aborted) throw context.signal.reason;
          if (result.status !== 'done') {
            failedTurns++;
            failures.push({
              turn: i,
              status: result.status,
              ...(result.error
                ? {
                    error: {
                      kind: result.error.kind,
                      message: result.error.message,
                      ...(result.error.status ? { status: result.error.status } : {}),
                    },
                  }
                : {}),
            });
          }
          answers.push(result.status === 'done' ? result.text : '');
        }
      } finally {
        context.signal.removeEventListener('abort', stop);
        await session.close();
      }
    } finally {
      // A session whose turns failed is kept for the user to open (`workmem sessions show`, `viz`).
      if (failures.length && sessionDir) keptSession = join(keepTemporaryHome(home), relative(home, sessionDir));
      else removeTemporaryHome(home);
    }
    return {
      answers,
      calls: meter.calls,
      upkeep: tracker.upkeep,
      summaries: 0,
      failedTurns,
      failures,
      ...(keptSession ? { keptSession } : {}),
      wallMs: performance.now() - started,
    };
  }
  const peer = peerAgent({
    llm: meter.llm,
    counter: context.counter,
    system: EVAL_INSTRUCTIONS,
    tools,
    summariseAt: arm === 'summarise-75' ? SUMMARISE_AT : null,
    contextWindow: context.contextWindow,
  });
  let summaries = 0;
  const peerTools = { errors: 0, asText: 0 };
  for (const [i, turn] of conversation.turns.entries()) {
    context.beforeTurn?.(i, meter.calls);
    meter.turn = i;
    const result = await peer.prompt(turn.text, context.signal);
    if (context.signal.aborted) throw context.signal.reason;
    summaries += result.summarised;
    peerTools.errors += result.toolErrors;
    if (holdsTextToolCall(result.text)) peerTools.asText++;
    if (result.failed) {
      failedTurns++;
      failures.push({ turn: i, status: 'failed', ...(result.error ? { error: result.error } : {}) });
    }
    answers.push(result.text);
  }
  return { answers, calls: meter.calls, upkeep: null, summaries, peerTools, failedTurns, failures, wallMs: performance.now() - started };
}
