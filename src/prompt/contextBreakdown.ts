/**
 * What a request held, group by group: system prompt, working memory, detail index, the
 * pinned messages, history (which mode, which range), tail (<context_meta>, the reminder)
 * — tokens and share of the window each, the 75 % line and the output reserve, and what compactions
 * archived and where. Pure: built from the prompt_built event of the request (or, before
 * the first, an estimate of the next), the history view and memory it was built from,
 * and the compaction_end events. `/context` in chat prints it; the visualizer can use it.
 *
 * The groups add up to the event's figures exactly: the parts the event does not split
 * (working memory and detail index, context_meta and reminder) are split by counting one
 * part and giving the other the rest.
 */
import type { CompactionReason, HistoryMode, PromptTokens, ReminderLevel, ReminderReason } from '../events.js';
import type { HistoryView } from '../history/historyView.js';
import type { MemorySnapshot } from '../memory/memoryRules.js';
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import type { TokenCounter } from '../tokens/tokens.js';
import { memoryPlacement, type MemoryPosition } from '../settings/settings.js';
import { NOTE_PREFIX, STUB_PREFIX } from '../compaction/plan.js';
import { memoryBlock } from './promptBuilder.js';
import { renderTail, type ContextMeta } from './requestTail.js';

/** The fields of a prompt_built event the breakdown reads. */
export interface BuiltRequest {
  turn: number;
  request: number;
  mode: HistoryMode;
  range: [number, number];
  /** The pinned messages carried (view indices); absent: none. */
  pinned?: readonly number[];
  tokens: PromptTokens;
}

export interface CompactionRecord {
  turn: number;
  reason: CompactionReason;
  replaced: number;
  tokensBefore: number;
  tokensAfter: number;
  files: readonly string[];
}

export interface BreakdownSources {
  /** The request, or an estimate of the next (Session.nextRequest) with `estimate` set. */
  request: BuiltRequest;
  estimate?: boolean;
  /** The history view the request's range indexes (the view when it was built). */
  history: HistoryView;
  /** The working memory the request carried. */
  memory: MemorySnapshot;
  /** The reminder the request carried, if any. */
  reminder: { level: ReminderLevel; reason: ReminderReason } | null;
  counter: Pick<TokenCounter, 'text'>;
  language: MemoryLanguage;
  /** Output tokens reserved for the answer. */
  reserveOutputTokens: number;
  /** Share of the window at which the system compacts (0.75). */
  threshold: number;
  compactions: readonly CompactionRecord[];
  /** Where the request carried the memory (absent: before the history); the groups follow that order. */
  memoryPosition?: MemoryPosition;
}

export type GroupKey = 'system' | 'memory' | 'detail_index' | 'pinned' | 'history' | 'tail';

export interface ContextGroup {
  key: GroupKey;
  label: string;
  tokens: number;
  /** Of the window, in percent with one decimal. */
  percent: number;
  /** What the group holds, in a few words. */
  about: string;
  parts?: { label: string; tokens: number }[];
}

/** A compaction's trace in the history a request carried: a note for archived turns, or a stub for a moved tool output. */
export interface ArchiveMark {
  kind: 'note' | 'stub';
  index: number;
  turn: number;
  tokens: number;
  file: string | null;
}

export interface ContextBreakdown {
  turn: number;
  request: number;
  estimate: boolean;
  mode: HistoryMode;
  window: number;
  /** Our count of the request; `total` adds the server's calibration. */
  counted: number;
  calibration: number;
  total: number;
  percent: number;
  threshold: { percent: number; tokens: number };
  reserveOutputTokens: number;
  /** The window less the request and the output reserve. */
  free: number;
  groups: ContextGroup[];
  history: { from: number; to: number; length: number; firstTurn: number | null; lastTurn: number | null; marks: ArchiveMark[] };
  compactions: readonly CompactionRecord[];
}

export function contextBreakdown(src: BreakdownSources): ContextBreakdown {
  const { request, history, counter } = src;
  const t = request.tokens;
  const [from, to] = request.range;
  const window = t.window;
  const pct = (n: number): number => Math.round((n / window) * 1000) / 10;
  const group = (key: GroupKey, label: string, tokens: number, about: string, parts?: ContextGroup['parts']): ContextGroup => ({
    key,
    label,
    tokens,
    percent: pct(tokens),
    about,
    ...(parts ? { parts } : {}),
  });

  const block = memoryBlock(src.memory);
  const indexAt = block.lastIndexOf('<detail_index>');
  const indexTokens = Math.min(t.memory, counter.text(block.slice(indexAt)));
  const files = src.memory.detail.length;

  const sent = to - from;
  const items = history.items.slice(from, Math.min(to, history.length));
  const turns = items.map((i) => i.turn);
  const meta: ContextMeta = {
    tokens_used: t.total,
    tokens_max: window,
    tokens_percent: t.percent,
    messages_in_history: Math.max(to, history.length),
    messages_sent: sent,
    working_memory_size: src.memory.bytes,
  };
  const metaTokens = src.reminder ? Math.min(t.tail, counter.text(renderTail(meta, null, src.language))) : t.tail;
  const tailParts = [{ label: '<context_meta>', tokens: metaTokens }];
  if (src.reminder) tailParts.push({ label: `reminder (${src.reminder.level}, ${src.reminder.reason})`, tokens: t.tail - metaTokens });

  const range = sent === 0 ? 'no messages' : `messages ${from + 1}–${to} of ${Math.max(to, history.length)}`;
  const turnSpan = turns.length ? ` (turns ${spanOf(turns)})` : '';
  const after = memoryPlacement(src.memoryPosition, request.mode) === 'after-history';
  const notebook = [
    group(
      'memory',
      'working memory',
      t.memory - indexTokens,
      `overview.md, ${src.memory.bytes} bytes${after ? ', before the last message' : ''}`,
    ),
    group('detail_index', 'detail index', indexTokens, `${files} file${files === 1 ? '' : 's'} in detail/`),
  ];
  // The pinned messages apart from the rest of the history: sent first when older than the range.
  const pins = (request.pinned ?? []).filter((i) => i < history.length);
  const pinnedTokens = pins.reduce((n, i) => n + history.items[i]!.tokens, 0);
  const first = pins.filter((i) => i < from).length;
  const pinnedGroup = pins.length
    ? [
        group(
          'pinned',
          'pinned',
          pinnedTokens,
          `${pins.length} message${pins.length === 1 ? '' : 's'} (turn${pins.length === 1 ? '' : 's'} ${turnList(pins.map((i) => history.items[i]!.turn))}), never compacted; ` +
            (first === pins.length
              ? 'sent before the history'
              : first
                ? `${first} sent before the history, the others in it`
                : 'in place in the history'),
        ),
      ]
    : [];
  const historyGroup = group('history', `history · ${request.mode}`, t.history - pinnedTokens, `${range}${turnSpan}`);
  const groups = [
    group('system', 'system prompt', t.system, 'role, memory duties, tool definitions'),
    // In the request's order: after the history, the memory sits between the earlier messages and the last.
    ...(after ? [...pinnedGroup, historyGroup, ...notebook] : [...notebook, ...pinnedGroup, historyGroup]),
    group('tail', 'tail', t.tail, src.reminder ? '<context_meta> and a reminder' : '<context_meta>', tailParts),
  ];
  const thresholdTokens = Math.floor(src.threshold * window);
  return {
    turn: request.turn,
    request: request.request,
    estimate: src.estimate === true,
    mode: request.mode,
    window,
    counted: t.counted,
    calibration: t.calibration,
    total: t.total,
    percent: t.percent,
    threshold: { percent: Math.round(src.threshold * 1000) / 10, tokens: thresholdTokens },
    reserveOutputTokens: src.reserveOutputTokens,
    free: Math.max(0, window - t.total - src.reserveOutputTokens),
    groups,
    history: {
      from,
      to,
      length: Math.max(to, history.length),
      firstTurn: turns.length ? Math.min(...turns) : null,
      lastTurn: turns.length ? Math.max(...turns) : null,
      marks: archiveMarks(history, from, Math.min(to, history.length)),
    },
    compactions: src.compactions,
  };
}

const FILE_NAMED = /(?:verbatim (?:to|in)|moved to) (\S+?)\.?(?=[\s\]]|$)/u;

function archiveMarks(history: HistoryView, from: number, to: number): ArchiveMark[] {
  const marks: ArchiveMark[] = [];
  for (let i = from; i < to; i++) {
    const item = history.items[i]!;
    const content = typeof item.message.content === 'string' ? item.message.content : '';
    const kind = content.startsWith(NOTE_PREFIX) ? 'note' : content.startsWith(STUB_PREFIX) ? 'stub' : null;
    if (kind) marks.push({ kind, index: i, turn: item.turn, tokens: item.tokens, file: FILE_NAMED.exec(content)?.[1] ?? null });
  }
  return marks;
}

/** Turns as a short list: 0, 3–5, 9. */
function turnList(turns: number[]): string {
  const sorted = [...new Set(turns)].sort((a, b) => a - b);
  const runs: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    runs.push(i === j ? `${sorted[i]}` : `${sorted[i]}–${sorted[j]}`);
    i = j + 1;
  }
  return runs.join(', ');
}

function spanOf(turns: number[]): string {
  const first = Math.min(...turns);
  const last = Math.max(...turns);
  return first === last ? `${first}` : `${first}–${last}`;
}
