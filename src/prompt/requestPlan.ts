/**
 * The decisions that make a request out of a turn's state, as pure functions: which prompt
 * base (system message and memory block) it is built on, phase 2's window, the request as
 * sent (tail included), whether it carries a reminder, and how the server's count corrects
 * ours. The turn machine takes them in its `assign`s; `/context`'s estimate of the next
 * request (Session.nextRequest) takes the same, so the two never disagree.
 */
import type { TokenUsage } from '../events.js';
import { carriedRange } from '../compaction/policy.js';
import { appendItem, fromItems, tokensBetween, type HistoryMode, type HistoryView } from '../history/historyView.js';
import { baseChanged, baseKey, lastWriteTurn, nextWindow, type RecentWindow, type WindowSight } from '../history/recentWindow.js';
import type { LLMUsage } from '../llm/llm.js';
import type { MemorySnapshot } from '../memory/memoryRules.js';
import { checkRound, type ReminderDue, type TrackerState } from '../memory/reminderTracker.js';
import { memoryPlacement, type MemoryPlacement, type TurnSettings } from '../settings/settings.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { ToolSpec } from '../tools/tool.js';
import { sumUsage } from '../../machines/tokenUsage.js';
import {
  anchorOf,
  buildPrompt,
  fitTail,
  heldBase,
  percentOf,
  promptBase,
  type BuiltPrompt,
  type PromptBase,
  type PromptPlan,
} from './promptBuilder.js';

/** What a request is made from: the turn machine's context has this shape (no copy per request). */
export interface RequestState {
  statics: { systemPrompt: string; tools: readonly ToolSpec[]; toolPrefix?: string; counter: TokenCounter; settings: TurnSettings };
  turn: number;
  history: HistoryView;
  mode: HistoryMode;
  tracker: TrackerState;
  calibration: number;
  base: PromptBase | null;
  window?: RecentWindow | null;
  /** The last request as built, if any: its tail is the first guess of the next one's. */
  prompt: BuiltPrompt | null;
  tailHint?: number;
}

/**
 * The request's system message and memory block. A new memory version, other remembered
 * items, a new day (the reminder's file name), with 'by-phase' another mode, or a host loop's
 * other instructions or tools make a new one. With memoryRefresh 'when-cheap' and the memory
 * before the history, a new memory version keeps the block in its place as it was (the
 * changes go in the tail: heldBase) until bringing it up to date is cheap (refreshDue).
 */
export function baseFor(state: RequestState, memory: MemorySnapshot): PromptBase {
  const settings = state.statics.settings;
  const placement = memoryPlacement(settings.memoryPosition, state.mode);
  const base = state.base;
  const sameFrame =
    base?.systemPrompt === state.statics.systemPrompt &&
    base.tools === state.statics.tools &&
    (base.toolPrefix ?? '') === (state.statics.toolPrefix ?? '') &&
    base.today === memory.today &&
    (base.memoryPosition ?? 'before-history') === placement;
  const current = sameFrame && base.memoryVersion === memory.version && base.relevant === (memory.relevant ?? '');
  // Up to date, or holding on to an earlier block for as long as that pays.
  if (current && (!base.memoryUpdate || !refreshDue(state, base))) return base;
  const anchor = sameFrame ? anchorOf(base) : base ? null : restoredAnchor(state, memory, placement);
  if (!current && anchor?.block !== undefined && settings.memoryRefresh === 'when-cheap' && placement === 'before-history') {
    const held = heldBase(anchor as PromptBase & { block: string }, memory, state.statics.counter, settings.language);
    if (!held.memoryUpdate || !refreshDue(state, held)) return held;
  }
  return promptBase(state.statics.systemPrompt, memory, state.statics.tools, state.statics.counter, placement, state.statics.toolPrefix);
}

/**
 * A resumed session's held memory block (saved with its window): the base it was held under,
 * when the system prompt, tools and day are those it was saved with; else null.
 */
function restoredAnchor(state: RequestState, memory: MemorySnapshot, placement: MemoryPlacement): PromptBase | null {
  const saved = state.window;
  if (!saved?.anchor || !saved.base || placement !== 'before-history') return null;
  const { systemPrompt, tools, counter, toolPrefix } = state.statics;
  // Never the current version: the held base computes the changes from it.
  const anchor = { ...promptBase(systemPrompt, memory, tools, counter, placement, toolPrefix, saved.anchor), memoryVersion: -1 };
  return baseKey(anchor) === saved.base ? anchor : null;
}

/**
 * Carrying the memory's changes in the tail has stopped paying: what follows the memory is
 * sent again anyway (phase 2's window starts again; a window that moves every turn, at a
 * turn's first request; hybrid's, always), or the changes, sent uncached with every request,
 * have grown to a tenth of the history after the memory, which a refresh sends again once
 * (cached reads cost a tenth: some ten requests carrying them cost what one refresh does).
 */
function refreshDue(state: RequestState, held: PromptBase): boolean {
  const settings = state.statics.settings;
  if (state.mode === 'hybrid') return true;
  if (state.mode === 'phase2') {
    if (settings.recentTurnsStep <= 1) return state.prompt === null;
    // The window starts again: what follows the memory is sent again anyway. With explicit
    // caching a refresh also writes again (at 1.25 ×) the cached prefix it gives up
    // (lostPrefix), which the changes must have grown to a tenth of first.
    if (nextWindow(state.window, state.turn, false, settings, sightOf(state, held))?.from !== state.window?.from)
      return settings.caching !== 'explicit' || (held.memoryUpdateTokens ?? 0) * UPDATE_SHARE >= lostPrefix(held);
  }
  const [from, to] = carriedRange({ ...state, window: state.mode === 'phase2' ? (state.window ?? null) : null });
  // What a refresh sends again: the history after the memory, and the memory itself; and the
  // system prompt and tools too when they alone are under the providers' smallest cached prefix.
  const resent = tokensBetween(state.history, from, to) + refreshedPrefix(held);
  return (held.memoryUpdateTokens ?? 0) * UPDATE_SHARE >= resent;
}

/**
 * What a refresh stops the cache from serving when the history after the memory is sent
 * again anyway: the system prompt, tools and held memory, when together they reach the
 * smallest cached prefix, less the system prompt and tools, when they alone do.
 */
function lostPrefix(held: PromptBase): number {
  const stable = held.tokens - held.memoryTokens;
  return (held.tokens >= MIN_CACHED_PREFIX ? held.tokens : 0) - (stable >= MIN_CACHED_PREFIX ? stable : 0);
}

/** The changes are carried while they are under this share of what a refresh sends again (1/10). */
const UPDATE_SHARE = 10;
/** Providers cache no prefix shorter than this (OpenAI's and Anthropic's smallest minimum). */
const MIN_CACHED_PREFIX = 1024;

/** Phase 2's window for the next request: held while the memory block in its place stays (recentWindow.ts). */
export function windowFor(state: RequestState, base: PromptBase): RecentWindow | null {
  if (state.mode !== 'phase2') return null;
  return nextWindow(state.window, state.turn, baseChanged(base, state.base, state.window), state.statics.settings, sightOf(state, base));
}

/**
 * What phase 2's window weighs: the history, the turn of the model's last memory write, and
 * its room: a held window keeps the request under WINDOW_SHARE of the context window (the
 * compression guide asks for no compaction below 20 %, only light work up to 40 %), the
 * prompt base aside.
 */
function sightOf(state: RequestState, base: PromptBase): WindowSight {
  const settings = state.statics.settings;
  // The base this request sends (a resumed session has no earlier one to go by).
  const room = Math.floor(settings.contextWindow * WINDOW_SHARE) - base.tokens;
  return {
    history: state.history,
    lastWrite: lastWriteTurn(state.history, state.tracker),
    budget: Math.max(0, room),
  };
}

/** What a refresh sends again before the history: the memory, and the system prompt and tools when they alone are under the smallest cached prefix. */
function refreshedPrefix(base: PromptBase): number {
  const stable = base.tokens - base.memoryTokens;
  return base.memoryTokens + (stable < MIN_CACHED_PREFIX ? stable : 0);
}

/** The share of the context window a held phase 2 request stays under. */
const WINDOW_SHARE = 0.38;

/**
 * The next request as it will be sent, tail included. Decisions are taken on it (the
 * percentage the model is shown), and it is sent unless a compaction changes the history.
 */
export function requestFor(state: RequestState, reminder: ReminderDue | null): BuiltPrompt {
  return buildPrompt(planFor(state, reminder));
}

function planFor(state: RequestState, reminder: ReminderDue | null): PromptPlan {
  return {
    base: state.base!,
    tools: state.statics.tools,
    history: state.history,
    range: carriedRange(state),
    calibration: state.calibration,
    tailHint: state.prompt?.tokens.tail ?? state.tailHint ?? 0,
    window: state.statics.settings.contextWindow,
    reminder,
    language: state.statics.settings.language,
    counter: state.statics.counter,
  };
}

/**
 * The reminder is decided on the request without one: a token reminder is then due
 * exactly when the percentage shown is over the threshold, since adding it only raises
 * the percentage. The reminder names the percentage of the request that carries it.
 */
export function requestWithReminder(state: RequestState): { prompt: BuiltPrompt; tracker: TrackerState; reminder: ReminderDue | null } {
  // Put together only if it is the one sent: the decision needs only its tail.
  const plan = planFor(state, null);
  const plain = fitTail(plan);
  // Phase 2's held window reminds when unrecorded turns are about to leave it, not after so many requests.
  const held = state.mode === 'phase2' && state.statics.settings.recentTurnsStep > 1;
  const { state: tracker, due } = checkRound(state.tracker, plain.meta.tokens_percent, state.statics.settings.reminder, {
    ...(state.window?.remind ? { leaving: state.window.remind } : {}),
    byRounds: !held,
  });
  if (!due) return { prompt: buildPrompt(plan, plain), tracker, reminder: null };
  const prompt = buildPrompt({ ...plan, reminder: due });
  const reminder = { ...due, tokensPercent: prompt.meta.tokens_percent };
  return { prompt: { ...prompt, reminder }, tracker, reminder };
}

/**
 * The server's prompt count minus ours corrects the next estimates. A count no tokenizer
 * could give for this prompt (a broken or corrupted server) keeps the old correction.
 */
export function calibrationFrom(usage: LLMUsage | null, counted: number, previous: number): number {
  if (!usage || !Number.isFinite(usage.promptTokens)) return previous;
  const plausible = usage.promptTokens >= counted / 4 && usage.promptTokens <= counted * 4 + 2000;
  return plausible ? Math.round(usage.promptTokens - counted) : previous;
}

/** The turn's usage so far plus one request's, when the server reported it. */
export function addUsage(sum: TokenUsage | null, usage: LLMUsage | null): TokenUsage | null {
  if (!usage) return sum;
  return sumUsage(sum, { input: usage.promptTokens, cached: usage.cachedPromptTokens ?? 0, output: usage.completionTokens });
}

/**
 * Before a message: the request it will open, as the turn will build it (the reminder it
 * would carry included) but for the message's own tokens. A stand-in empty user message
 * carries the tail, and its tokens are taken out again.
 */
export function nextRequestEstimate(state: RequestState, memory: MemorySnapshot): BuiltPrompt {
  const stand = { role: 'user' as const, content: '' };
  const standTokens = state.statics.counter.message(stand);
  // A copy: the session's own view is never appended to.
  const history = appendItem(fromItems(state.history.items.slice(0, state.history.length)), {
    seq: -1,
    turn: state.turn,
    message: stand,
    tokens: standTokens,
  });
  const next = { ...state, history };
  const base = baseFor(next, memory);
  const { prompt } = requestWithReminder({ ...next, base, window: windowFor(next, base) });
  const t = prompt.tokens;
  const total = t.total - standTokens;
  return {
    ...prompt,
    messages: prompt.messages,
    range: [prompt.range[0], Math.min(prompt.range[1], state.history.length)],
    pinned: prompt.pinned.filter((i) => i < state.history.length),
    tokens: { ...t, history: t.history - standTokens, counted: t.counted - standTokens, total, percent: percentOf(total, t.window) },
  };
}
