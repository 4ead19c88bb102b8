/**
 * A compaction as its record in messages.jsonl counts it: the tokens of the items that left
 * the history, and of the note and stubs that took their place. The compaction_end event
 * counts the range the compaction worked on (the history a request carried, or all of it
 * for /compact and compact_history), what stayed included; read from the history before
 * and after, the markers show what left and what replaced it, for every reason alike.
 */
import type { WorkmemEvent } from '../events.js';
import type { HistoryView } from '../history/historyView.js';
import type { Session } from '../session/index.js';

export type CompactionEnd = Extract<WorkmemEvent, { type: 'compaction_end' }>;

/** Calls `onEnd` for each compaction of `session` that replaced anything, with the record's figures; returns a function that stops. */
export function followCompactions(
  session: Session,
  onEnd: (event: CompactionEnd, tokensBefore: number, tokensAfter: number) => void,
): () => void {
  let before: HistoryView = session.history;
  return session.on('*', (e: WorkmemEvent) => {
    if (e.type === 'compaction_start') before = session.history;
    if (e.type !== 'compaction_end' || e.replaced === 0) return;
    const after = session.history;
    onEnd(e, tokensNotIn(before, after), tokensNotIn(after, before));
    before = after;
  });
}

/** Tokens of the items of `view` that `other` does not hold (a stub keeps its message's seq, not its tokens). */
function tokensNotIn(view: HistoryView, other: HistoryView): number {
  const key = (item: { seq: number; tokens: number }): string => `${item.seq}:${item.tokens}`;
  const held = new Set(other.items.slice(0, other.length).map(key));
  return view.items.slice(0, view.length).reduce((n, item) => (held.has(key(item)) ? n : n + item.tokens), 0);
}
