/**
 * The compactor actor: brings the carried history under a token budget by archiving the
 * oldest whole turns verbatim to working-memory/detail/ (lossless) and replacing them
 * with a short note. Whole turns only, so a tool call is never separated from its
 * result; the active turn is never archived. The detail file is written before the
 * log entry, so a crash in between leaves an extra file and loses nothing.
 */
import type { CompactorInput, CompactorOutput } from '../machines/turnMachine.js';
import type { CompactionReason } from './events.js';
import { tokensBetween, turnStartIndex, type HistoryItem, type HistoryView } from './historyView.js';
import type { ChatMessage } from './messages.js';
import type { SessionFiles } from './sessionFiles.js';
import type { TokenCounter } from './tokens.js';
import { renderTranscript } from './transcript.js';

export interface CompactorDeps {
  files: SessionFiles;
  counter: TokenCounter;
  now(): number;
}

/** A run of consecutive items of one turn (or one earlier compaction note). */
export interface Block {
  start: number;
  end: number;
  tokens: number;
}

/** Rough size of the note that replaces archived turns, used while choosing them. */
const NOTE_ESTIMATE = 80;

export function turnBlocks(view: HistoryView, from: number, to: number): Block[] {
  const blocks: Block[] = [];
  let start = from;
  for (let i = from + 1; i <= to; i++) {
    if (i === to || view.items[i]!.turn !== view.items[start]!.turn || view.items[i]!.message.role === 'user') {
      blocks.push({ start, end: i, tokens: tokensBetween(view, start, i) });
      start = i;
    }
  }
  return blocks;
}

export function archiveOldestTurns(input: CompactorInput, deps: CompactorDeps): CompactorOutput {
  const { history, range } = input;
  const before = tokensBetween(history, range[0], range[1]);
  const unchanged = { history, replaced: 0, files: [], tokensBefore: input.fixedTokens + before, tokensAfter: input.fixedTokens + before };
  if (before <= input.budget) return unchanged;

  const activeStart = Math.max(range[0], turnStartIndex(history, input.turn));
  const blocks = turnBlocks(history, range[0], activeStart);
  const chosen = chooseOldest(blocks, before, input.budget, input.keepRecentTurns);
  if (chosen === 0) return unchanged;

  const from = blocks[0]!.start;
  const to = blocks[chosen - 1]!.end;
  const entry = archiveRange(deps, history, from, to, input.turn, input.reason);
  const after = tokensBetween(deps.files.history, ...rangeAfter(range, to - from - 1));
  return {
    history: deps.files.history,
    replaced: to - from,
    files: entry.files,
    tokensBefore: input.fixedTokens + before,
    tokensAfter: input.fixedTokens + after,
  };
}

/**
 * How many of the oldest blocks to archive: the fewest that meet the budget while the
 * last `keepRecent` turns stay; if even all of those are not enough, keep fewer.
 */
function chooseOldest(blocks: Block[], before: number, budget: number, keepRecent: number): number {
  for (let keep = Math.min(keepRecent, blocks.length); keep >= 0; keep--) {
    const allowed = blocks.length - keep;
    let removed = 0;
    for (let n = 1; n <= allowed; n++) {
      removed += blocks[n - 1]!.tokens;
      if (before - removed + NOTE_ESTIMATE <= budget) return n;
    }
  }
  // Best effort: everything before the active turn, unless that would not even pay for its note.
  const all = blocks.reduce((sum, b) => sum + b.tokens, 0);
  return all > 2 * NOTE_ESTIMATE ? blocks.length : 0;
}

function rangeAfter(range: [number, number], removedItems: number): [number, number] {
  return [range[0], range[1] - removedItems];
}

/** Archive items[from, to) to a detail/ transcript and record the compaction. */
export function archiveRange(deps: CompactorDeps, view: HistoryView, from: number, to: number, turn: number, reason: CompactionReason) {
  const items = view.items.slice(from, to);
  const tokens = tokensBetween(view, from, to);
  const turns = turnSpan(items);
  const stamp = new Date(deps.now()).toISOString();
  const path = uniqueDetailPath(deps.files, `compact-${stamp.replace(/[:.]/g, '-')}`);
  const transcript = renderTranscript(
    `Archived conversation, turns ${turns}`,
    `Archived verbatim on ${stamp} (${reasonText(reason)}): ${items.length} messages, ${tokens} tokens. Nothing was changed or left out.`,
    items,
  );
  deps.files.memory.write(path, transcript);
  const note: ChatMessage = {
    role: 'user',
    content:
      `[Earlier conversation compacted: turns ${turns} (${items.length} messages, ${tokens} tokens) were archived verbatim to ` +
      `working-memory/${path}. Read that file with the read tool if you need anything from it.]`,
  };
  return deps.files.appendCompaction({
    type: 'compaction',
    turn,
    reason,
    target: 'conversation',
    strategy: 'archive',
    replaces: { from: items[0]!.seq, to: items[items.length - 1]!.seq, count: items.length },
    note: { message: note, tokens: deps.counter.message(note) },
    files: [`working-memory/${path}`],
    tokensBefore: tokens,
    tokensAfter: deps.counter.message(note),
  });
}

function turnSpan(items: readonly HistoryItem[]): string {
  const first = items[0]!.turn;
  const last = items[items.length - 1]!.turn;
  return first === last ? `${first}` : `${first}-${last}`;
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
      return 'automatic compaction policy';
  }
}

function uniqueDetailPath(files: SessionFiles, stem: string): string {
  const taken = new Set(files.memory.snapshot().detail.map((d) => d.path));
  let path = `detail/${stem}.md`;
  for (let i = 2; taken.has(path); i++) path = `detail/${stem}-${i}.md`;
  return path;
}
