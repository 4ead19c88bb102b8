/**
 * Which of a host's messages workmem has archived: a compaction replaced them in the
 * session's history (the log keeps them, and the archive file their text), so the host may
 * drop them from its own state, as LangChain's summarization drops what it summarised. What
 * the host keeps is then a window of the log's end, which matching takes as it is
 * (acceptCall.ts). Pinned messages are never archived.
 */
import type { HostConversation } from '../../machines/sessionMachine.js';
import { HostSpans } from './hostLine.js';
import type { HistoryView } from './historyView.js';
import type { SessionRecord } from './sessionRecord.js';

/** The seqs of a view's items, kept while the view only grows at its tip. */
const inViews = new WeakMap<readonly unknown[], { length: number; seqs: Set<number> }>();

function seqsOf(view: HistoryView): Set<number> {
  let known = inViews.get(view.items);
  if (!known || known.length > view.length) {
    known = { length: 0, seqs: new Set() };
    inViews.set(view.items, known);
  }
  for (let i = known.length; i < view.length; i++) known.seqs.add(view.items[i]!.seq);
  known.length = view.length;
  return known.seqs;
}

/**
 * The host's messages that stand for archived log messages, as index ranges [start, end) in
 * order: its conversation is taken to be the end of the session's (as it is right after a
 * model call it handed over, its answer recorded); where the two do not end alike nothing is
 * archived. The run stops at the first message the history still holds.
 */
export function archivedHostRanges(record: SessionRecord, conversation: HostConversation): [number, number][] {
  const line = record.hostLine.elements;
  const spans = HostSpans.of(conversation, record.redact, null);
  const h = spans.length;
  const n = line.length;
  if (h === 0 || h > n || spans.key(h - 1) !== line[n - 1]!.key || spans.key(0) !== line[n - h]!.key) return [];
  const inView = seqsOf(record.history);
  const ranges: [number, number][] = [];
  for (let j = 0; j < h; j++) {
    if (conversation.pinned?.(spans.start(j))) continue;
    const element = line[n - h + j]!;
    if (element.at.some((seq) => inView.has(seq)) || spans.key(j) !== element.key) break;
    const last = ranges.at(-1);
    if (last && last[1] === spans.start(j)) last[1] = spans.end(j);
    else ranges.push([spans.start(j), spans.end(j)]);
  }
  return ranges;
}
