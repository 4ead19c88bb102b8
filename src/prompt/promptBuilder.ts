/**
 * Assembles a request in the prefix-cache-friendly order of docs/design.md §4:
 * system prompt + working memory (one system message) → history per mode → the tail,
 * appended to the last message only. The pinned messages older than the history a mode
 * carries are sent first, right after the system message: every request carries them.
 * With memoryPosition 'after-history' the memory block
 * leaves the system message and opens the last message instead (before its text and
 * tail), so that a memory write no longer changes the prefix the history is cached under.
 * Pure: counts come from stored per-message counts, and only the system message and memory
 * (when the memory changes) and the tailed last message are counted here.
 */
import type { ChatMessage, PromptTokens } from '../events.js';
import type { MemoryPlacement } from '../settings/settings.js';
import { withSuffix } from '../history/messages.js';
import { itemAt, pinsBetween, tokensBetween, tokensOf, type HistoryView } from '../history/historyView.js';
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import type { ReminderDue } from '../memory/reminderTracker.js';
import { renderTail, TAIL_SEPARATOR, type ContextMeta } from './requestTail.js';
import { countByLines } from '../tokens/lineCounts.js';
import { neutraliseTags } from './structuralTags.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { CacheBreakpoint } from '../llm/llm.js';
import type { ToolSpec } from '../tools/tool.js';
import { OVERVIEW_PATH, type MemorySnapshot } from '../memory/memoryRules.js';
import { byteSize as formatBytes } from '../format/byteSize.js';
import { renderMemoryUpdate } from './memoryUpdate.js';

/** Everything in a request besides the history; recomputed only when the memory changes. */
export interface PromptBase {
  /** The system prompt and tools it was built with (a host loop's calls may change them). */
  systemPrompt: string;
  tools: readonly ToolSpec[];
  memoryVersion: number;
  /** Where the memory block goes; absent: 'before-history'. */
  memoryPosition?: MemoryPlacement;
  /**
   * After the history: the memory block and its separator, put before the last message's
   * text (a message of its own there would split a tool call from its result).
   */
  memoryHead?: string;
  relevant: string;
  systemContent: string;
  /** Characters of systemContent that are the system prompt (stable), before the memory (all of it after the history). */
  stableChars?: number;
  /** System message + tool definitions + reply priming, and the memory block wherever it goes. */
  tokens: number;
  /** The memory block's share of `tokens`, for the breakdown (after the history: with its separator). */
  memoryTokens: number;
  memoryBytes: number;
  /** The day the memory was loaded, for the reminder's suggested file name (absent: not known). */
  today?: string;
  /** The prefix workmem's tools are sent with, for the reminder that names them (absent: none). */
  toolPrefix?: string;
  /** The memory block as this base carries it in its place (its text; with memoryHead, that without its separator). */
  block?: string;
  /**
   * memoryRefresh 'when-cheap': the base whose memory block this one still carries, while the
   * memory has changed since; the changes go in the tail (`memoryUpdate`). Absent: the block is current.
   */
  anchor?: PromptBase;
  /** The changes since the anchor's block, as the tail carries them (memoryUpdate.ts). */
  memoryUpdate?: string;
  memoryUpdateTokens?: number;
}

/** The base whose memory block a request carries in its place: itself, or the one it holds on to. */
export function anchorOf(base: PromptBase): PromptBase {
  return base.anchor ?? base;
}

/**
 * A base that keeps `anchor`'s memory block in its place and carries the changes to `memory`
 * in the tail (memoryRefresh 'when-cheap').
 */
export function heldBase(
  anchor: PromptBase & { block: string },
  memory: MemorySnapshot,
  counter: TokenCounter,
  language: MemoryLanguage,
): PromptBase {
  const update = renderMemoryUpdate(anchor.block, memoryBlock(memory), language, OVERVIEW_PATH);
  if (update === null)
    return { ...anchor, memoryVersion: memory.version, memoryBytes: memory.bytes, relevant: memory.relevant ?? '', anchor };
  return {
    ...anchor,
    memoryVersion: memory.version,
    memoryBytes: memory.bytes,
    relevant: memory.relevant ?? '',
    anchor,
    memoryUpdate: update,
    memoryUpdateTokens: counter.text(update),
  };
}

/**
 * Detail files named one by one in the index. Past this, the earliest are summed up in one
 * line: an agent that compacts often gathers an archive every few turns, and the index is
 * sent with every request (and again with every refresh of the memory in its place). The
 * newest archives and the files after them in name order (the model's own notes) stay named.
 */
const INDEX_ENTRIES = 12;

export function memoryBlock(memory: MemorySnapshot): string {
  const line = (d: MemorySnapshot['detail'][number]): string =>
    d.path.endsWith('/')
      ? `- working-memory/${d.path}: full outputs of large tool results, each named where it was cut`
      : `- working-memory/${d.path} (${formatBytes(d.bytes)})${d.heading ? `: ${d.heading}` : ''}`;
  // Folders (the tool outputs') are always named: they say what they hold.
  const folders = memory.detail.filter((d) => d.path.endsWith('/'));
  const files = memory.detail.filter((d) => !d.path.endsWith('/'));
  const earlier = files.slice(0, Math.max(0, files.length - INDEX_ENTRIES));
  const shown = [...folders, ...files.slice(earlier.length)].map(line);
  if (earlier.length)
    shown.unshift(
      `- … ${earlier.length} earlier files (${formatBytes(earlier.reduce((n, d) => n + d.bytes, 0))}), from working-memory/${earlier[0]!.path} to working-memory/${earlier.at(-1)!.path}`,
    );
  // The memory may quote tool output: it cannot close or forge the tags around it.
  const index = shown.length ? neutraliseTags(shown.join('\n')) : '(no files yet)';
  const relevant = memory.relevant ? `\n\n<relevant_memories>\n${neutraliseTags(memory.relevant)}\n</relevant_memories>` : '';
  return `<working_memory file="${OVERVIEW_PATH}">\n${neutraliseTags(memory.content.trimEnd())}\n</working_memory>${relevant}\n\n<detail_index>\n${index}\n</detail_index>`;
}

export function promptBase(
  systemPromptText: string,
  memory: MemorySnapshot,
  tools: readonly ToolSpec[],
  counter: TokenCounter,
  position: MemoryPlacement = 'before-history',
  toolPrefix = '',
  /** The memory block to carry in its place, when it is not the memory's own (a held one, restored). */
  block = memoryBlock(memory),
): PromptBase {
  const common = {
    block,
    systemPrompt: systemPromptText,
    tools,
    memoryVersion: memory.version,
    relevant: memory.relevant ?? '',
    stableChars: systemPromptText.length,
    memoryBytes: memory.bytes,
    ...(memory.today ? { today: memory.today } : {}),
    ...(toolPrefix ? { toolPrefix } : {}),
  };
  if (position === 'after-history') {
    const memoryHead = `${block}${MEMORY_SEPARATOR}`;
    const memoryTokens = counter.text(memoryHead);
    return {
      ...common,
      memoryPosition: position,
      memoryHead,
      systemContent: systemPromptText,
      tokens: counter.requestBase(systemPromptText, tools) + memoryTokens,
      memoryTokens,
    };
  }
  const systemContent = `${systemPromptText}${MEMORY_SEPARATOR}${block}`;
  return { ...common, systemContent, tokens: counter.requestBase(systemContent, tools), memoryTokens: counter.text(block) };
}

const MEMORY_SEPARATOR = '\n\n';

/** The last message as sent: the memory block before its text when it goes after the history, then the tail. */
function lastAsSent<M extends ChatMessage>(base: PromptBase, message: M, tail: string): M {
  const headed = base.memoryHead ? { ...message, content: base.memoryHead + (message.content ?? '') } : message;
  return withSuffix(headed, tail);
}

export type { PromptTokens };

export interface BuiltPrompt {
  messages: ChatMessage[];
  tools: readonly ToolSpec[];
  tokens: PromptTokens;
  meta: ContextMeta;
  reminder: ReminderDue | null;
  /** The injected history range [from, to) of the view. */
  range: [number, number];
  /**
   * The pinned messages the request carries, as view indices in order: those before
   * `range[0]` are sent first, right after the system message; the others are in the range.
   */
  pinned: number[];
  /** Where the stable parts end (system prompt, memory, history before the last message), for explicit caching. */
  cacheBreakpoints: CacheBreakpoint[];
}

export interface PromptPlan {
  base: PromptBase;
  tools: readonly ToolSpec[];
  history: HistoryView;
  range: [number, number];
  calibration: number;
  /** A guess of the tail's tokens (the last request's): right, it saves a recount. */
  tailHint?: number;
  window: number;
  reminder: ReminderDue | null;
  language: MemoryLanguage;
  counter: TokenCounter;
}

/** The cost of a request before its tail, for the compaction check. */
export function estimateWithoutTail(base: PromptBase, history: HistoryView, range: [number, number], calibration: number): number {
  return base.tokens + pinnedBeforeTokens(history, range[0]) + tokensBetween(history, range[0], range[1]) + calibration;
}

/** Tokens of the pinned messages before `from`: a request carrying history from there sends them too. */
export function pinnedBeforeTokens(history: HistoryView, from: number): number {
  return tokensOf(history, pinsBetween(history, 0, from));
}

const MAX_FIXPOINT_STEPS = 4;

/** A request's last message fitted with its tail (the fixed point below), before the request is put together. */
export interface FittedTail {
  meta: ContextMeta;
  lastMessage: ChatMessage;
  lastTokens: number;
  /** Tokens of everything before the last message (the calibration included). */
  beforeLast: number;
  historyTokens: number;
  pinnedBefore: number[];
}

/**
 * tokens_used is printed inside the tail, which itself costs tokens: iterate to the fixed
 * point. The last message's own text (and the memory block before it) is counted once; each
 * step counts only the tail (a cut no token spans: the separator ends in a line break, and the
 * tail goes on with '<', see lineCounts.ts).
 */
export function fitTail(plan: PromptPlan): FittedTail {
  const { base, history, range, counter } = plan;
  const [from, to] = range;
  if (to <= from) throw new Error('buildPrompt: a request needs at least one history message (the user message)');
  const pinnedBefore = pinsBetween(history, 0, from);
  const historyTokens = tokensOf(history, pinnedBefore) + tokensBetween(history, from, to);
  const last = itemAt(history, to - 1);
  // Everything before the last message; after the history the memory is in the last message.
  const head = base.memoryHead ? base.memoryTokens : 0;
  const beforeLast = base.tokens - head + historyTokens - last.tokens + plan.calibration;
  const tailOf = (meta: ContextMeta): string =>
    renderTail(meta, plan.reminder, plan.language, base.today ?? null, base.toolPrefix, base.memoryUpdate ?? null);
  const ownTokens = lastOwnTokens(base, last.message, counter);
  const tokensWith = (tail: string): number => ownTokens + countByLines(counter, tail.slice(TAIL_SEPARATOR.length));

  let used = beforeLast + head + last.tokens + (plan.tailHint ?? 0);
  const sent = pinnedBefore.length + to - from;
  let meta = contextMeta(plan, used, sent);
  let tail = tailOf(meta);
  let lastTokens = tokensWith(tail);
  for (let step = 0; step < MAX_FIXPOINT_STEPS && beforeLast + lastTokens !== used; step++) {
    used = beforeLast + lastTokens;
    meta = contextMeta(plan, used, sent);
    tail = tailOf(meta);
    lastTokens = tokensWith(tail);
  }
  return { meta, lastMessage: lastAsSent(base, last.message, tail), lastTokens, beforeLast, historyTokens, pinnedBefore };
}

/** The last message counted as sent up to its tail's separator; one entry, as a request's plain and reminded builds share it. */
let lastOwn: { message: ChatMessage; memoryHead: string | undefined; counter: TokenCounter; tokens: number } | null = null;

function lastOwnTokens(base: PromptBase, message: ChatMessage, counter: TokenCounter): number {
  if (lastOwn?.message !== message || lastOwn.memoryHead !== base.memoryHead || lastOwn.counter !== counter)
    lastOwn = { message, memoryHead: base.memoryHead, counter, tokens: counter.message(lastAsSent(base, message, TAIL_SEPARATOR)) };
  return lastOwn.tokens;
}

export function buildPrompt(plan: PromptPlan, fitted: FittedTail = fitTail(plan)): BuiltPrompt {
  const { base, history, range } = plan;
  const [from, to] = range;
  const { meta, lastMessage, lastTokens, beforeLast, historyTokens, pinnedBefore } = fitted;
  const head = base.memoryHead ? base.memoryTokens : 0;
  const total = beforeLast + lastTokens;

  const messages = new Array<ChatMessage>(pinnedBefore.length + to - from + 1);
  messages[0] = { role: 'system', content: base.systemContent };
  let at = 1;
  for (const i of pinnedBefore) messages[at++] = history.items[i]!.message;
  for (let i = from; i < to - 1; i++) messages[at++] = history.items[i]!.message;
  messages[at] = lastMessage;
  const tail = lastTokens - itemAt(history, to - 1).tokens - head;
  // The history up to the last message's own text (its tail aside) is the same in the next request in phase 1 and
  // within a tool loop in any mode, and in phase 2 while its window holds. The pinned messages sent first stay while
  // phase 2's window moves on: their end is a stable prefix too.
  // The last message's own text, before its tail; with the memory after the history (memoryHead) the next request
  // sends that message without it, so there the history before the last message is the prefix.
  const own = (itemAt(history, to - 1).message.content ?? '').length;
  const last = base.memoryHead
    ? messages.length > 2
      ? [{ message: messages.length - 2 }]
      : []
    : messages.length > 1 && own > 0
      ? [{ message: messages.length - 1, chars: own }]
      : [];
  const inHistory: CacheBreakpoint[] = [
    ...(pinnedBefore.length && pinnedBefore.length < messages.length - 2 ? [{ message: pinnedBefore.length }] : []),
    ...last,
  ];
  const cacheBreakpoints: CacheBreakpoint[] = base.memoryHead
    ? [{ message: 0 }, ...inHistory]
    : [...(base.stableChars ? [{ message: 0, chars: base.stableChars }] : []), { message: 0 }, ...inHistory];
  return {
    messages,
    tools: plan.tools,
    cacheBreakpoints,
    tokens: {
      system: base.tokens - base.memoryTokens,
      memory: base.memoryTokens,
      history: historyTokens,
      tail,
      counted: total - plan.calibration,
      calibration: plan.calibration,
      total,
      cacheable: beforeLast - plan.calibration,
      window: plan.window,
      percent: percentOf(total, plan.window),
    },
    meta,
    reminder: plan.reminder,
    range: [from, to],
    pinned: [...pinnedBefore, ...pinsBetween(history, from, to)],
  };
}

function contextMeta(plan: PromptPlan, used: number, sent: number): ContextMeta {
  return {
    tokens_used: used,
    tokens_max: plan.window,
    tokens_percent: percentOf(used, plan.window),
    messages_in_history: plan.history.length,
    messages_sent: sent,
    working_memory_size: plan.base.memoryBytes,
  };
}

export function percentOf(tokens: number, window: number): number {
  return Math.round((tokens / window) * 100);
}
