/**
 * Carries out a compaction plan (plan.ts), the one place that does: the archived turns
 * and moved tool outputs go verbatim to a transcript inside working-memory/ (detail/ by
 * default), and one log entry replaces the turns by a note (a structured summary when
 * asked and possible) and each output by a one-line stub naming where it went. Pinned
 * messages among the turns are not archived: the entry names them as kept. The two
 * are committed as one unit (CompactionStore.commit): a crash loses nothing.
 */
import type { CompactionReason } from '../events.js';
import type { HistoryItem } from '../history/historyView.js';
import { NOTE_PREFIX, STUB_PREFIX, type CompactionPlan, type CompactionStrategy, type CompactionTarget } from './plan.js';
import type { CompactionEntry } from '../storage/messageLog.js';
import type { ChatMessage } from '../history/messages.js';
import type { CompactionStore } from './store.js';
import type { Summarizer } from './summarizer.js';
import { neutraliseTags } from '../prompt/structuralTags.js';
import type { TokenCounter } from '../tokens/tokens.js';
import { renderTranscriptInSlices } from '../history/transcript.js';
import { yieldIfBusy } from '../runtime/fairYield.js';

export interface CompactionDeps {
  store: CompactionStore;
  counter: TokenCounter;
  now(): number;
  summarizer: Summarizer | null;
  /** The window requests must fit in, for the share compact_history reports. */
  contextWindow?: number;
  /** The tokens of the last request built, whole and its history's part (none before the first). */
  lastRequest?(): { total: number; history: number } | null;
}

/** What a compaction did: items replaced, messages archived, outputs stubbed, the files written, tokens before and after. */
export interface CompactionResult {
  entry: CompactionEntry | null;
  /** Items replaced or stubbed. */
  changed: number;
  archivedMessages: number;
  stubbed: number;
  files: string[];
  turns: string;
  tokensBefore: number;
  tokensAfter: number;
  summary: 'written' | 'failed' | 'not asked';
}

/** The result of a plan with nothing in it. */
export const NOTHING_COMPACTED: CompactionResult = Object.freeze({
  entry: null,
  changed: 0,
  archivedMessages: 0,
  stubbed: 0,
  files: [],
  turns: '',
  tokensBefore: 0,
  tokensAfter: 0,
  summary: 'not asked',
});

/** Carry out a plan: the summary asked for first, then the archive and the compaction entry together. */
export async function applyCompaction(
  plan: CompactionPlan,
  options: {
    target: CompactionTarget;
    strategy: CompactionStrategy;
    reason: CompactionReason;
    turn: number;
    archiveTo?: string;
    /** The summary, made already (in the background): no summarizer is asked. */
    summary?: string;
    /** With `summary`: the archive's first so many items (pinned ones included) are what it summarises; the rest have none. */
    summarized?: number;
  },
  deps: CompactionDeps,
  signal: AbortSignal,
): Promise<CompactionResult> {
  const { store, counter } = deps;
  const view = store.history();
  const inArchive = plan.archive ? view.items.slice(plan.archive[0], plan.archive[1]) : [];
  const kept = new Set(plan.kept.map((i) => view.items[i]!.seq));
  const archived = inArchive.filter((item) => !kept.has(item.seq));
  const stubbed = plan.stubs.map((i) => view.items[i]!);
  const tokensBefore = sum(archived) + sum(stubbed);
  if (archived.length === 0 && stubbed.length === 0) return NOTHING_COMPACTED;
  await yieldIfBusy();

  const stamp = new Date(deps.now()).toISOString();
  const path = options.archiveTo ?? (await uniqueDetailPath(store, `compact-${stamp.replace(/[:.]/g, '-')}`));
  const turns = span([...archived, ...stubbed]);
  const sections: string[] = [];
  if (archived.length) {
    sections.push(
      await renderTranscriptInSlices(
        `Archived conversation, turns ${turns}`,
        `Archived verbatim on ${stamp} (${reasonText(options.reason)}): ${archived.length} messages, ${sum(archived)} tokens. Nothing was changed or left out.`,
        archived,
      ),
    );
  }
  if (stubbed.length) {
    sections.push(
      await renderTranscriptInSlices(
        `Tool outputs moved out of the history`,
        `Moved on ${stamp} (${reasonText(options.reason)}): ${stubbed.length} tool outputs, verbatim.`,
        stubbed,
      ),
    );
  }
  const where = `working-memory/${await store.resolvePath(path)}`;

  let summary: CompactionResult['summary'] = 'not asked';
  let note: ChatMessage | null = null;
  if (archived.length) {
    let body: string | null = null;
    if (options.strategy === 'summarize') {
      // The summary retells tool output and memory: it must not forge workmem's tags either.
      const written = options.summary ?? (deps.summarizer ? await deps.summarizer(archived, signal) : null);
      body = written ? neutraliseTags(written) : null;
      summary = body ? 'written' : 'failed';
    }
    const unsummarized = options.summarized === undefined ? [] : inArchive.slice(options.summarized).filter((item) => !kept.has(item.seq));
    const summarized = archived.length - unsummarized.length;
    note = {
      role: 'user',
      content: body
        ? unsummarized.length
          ? `${NOTE_PREFIX}: summary of turns ${span(archived.slice(0, summarized))} (${summarized} messages); turns ${span(unsummarized)} (${unsummarized.length} messages, ${sum(unsummarized)} tokens) have no summary; all of them are verbatim in ${where}.]\n\n${body}`
          : `${NOTE_PREFIX}: summary of turns ${turns} (${archived.length} messages); the messages themselves are verbatim in ${where}.]\n\n${body}`
        : `${NOTE_PREFIX}: turns ${turns} (${archived.length} messages, ${sum(archived)} tokens) were archived verbatim to ${where}. Read that file with the read tool if you need anything from it.]`,
    };
  }
  const stubs = stubbed.map((item) => {
    const m = item.message as Extract<ChatMessage, { role: 'tool' }>;
    const content = `${STUB_PREFIX} to ${where} (${m.tool_call_id}, ${formatSize(m.content)}). Read it there if you need it.]`;
    return { seq: item.seq, content, tokens: counter.message({ ...m, content }) };
  });
  const noteTokens = note ? counter.message(note) : 0;
  const tokensAfter = noteTokens + stubs.reduce((n, s) => n + s.tokens, 0);
  const archive = { path, content: sections.join('\n\n'), append: options.archiveTo !== undefined };
  const entry = await store.commit(archive, {
    type: 'compaction',
    turn: options.turn,
    reason: options.reason,
    target: options.target,
    strategy: options.strategy,
    ...(archived.length
      ? {
          replaces: {
            from: archived[0]!.seq,
            to: archived.at(-1)!.seq,
            count: inArchive.length,
            ...(kept.size ? { kept: [...kept] } : {}),
          },
          note: { message: note!, tokens: noteTokens },
        }
      : {}),
    ...(stubs.length ? { stubs } : {}),
    files: [where],
    tokensBefore,
    tokensAfter,
  });
  return {
    entry,
    changed: archived.length + stubs.length,
    archivedMessages: archived.length,
    stubbed: stubs.length,
    files: [where],
    turns,
    tokensBefore,
    tokensAfter,
    summary,
  };
}

function sum(items: readonly HistoryItem[]): number {
  return items.reduce((n, item) => n + item.tokens, 0);
}

function span(items: readonly HistoryItem[]): string {
  const turns = items.map((i) => i.turn);
  const first = Math.min(...turns);
  const last = Math.max(...turns);
  return first === last ? `${first}` : `${first}-${last}`;
}

function formatSize(text: string): string {
  const bytes = Buffer.byteLength(text);
  const lines = text.split('\n').length;
  return `${bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`}, ${lines} line${lines === 1 ? '' : 's'}`;
}

function reasonText(reason: CompactionReason): string {
  switch (reason) {
    case 'fallback':
      return 'automatic compaction at the context threshold';
    case 'overflow':
      return 'the server reported a context overflow';
    case 'llm':
      return 'compact_history called by the model';
    case 'auto':
      return 'the automatic compaction policy';
    case 'manual':
      return 'asked for by the user';
    case 'horizon':
      return 'the history kept for phase 1 reached the context threshold (it is not sent in this mode)';
    case 'background':
      return 'automatic compaction at the context threshold, with a summary prepared in the background';
  }
}

async function uniqueDetailPath(store: CompactionStore, stem: string): Promise<string> {
  let path = `detail/${stem}.md`;
  for (let i = 2; await store.exists(path); i++) path = `detail/${stem}-${i}.md`;
  return path;
}
