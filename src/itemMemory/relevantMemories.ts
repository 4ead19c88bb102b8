/** Item memory injected after overview.md: the items most relevant to the latest user message. */
import { NOTE_PREFIX } from '../compaction/plan.js';
import type { HistoryView } from '../history/historyView.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { ItemMemory } from './itemMemory.js';

/** The latest real user message (not a compaction note). */
export function latestUserText(view: HistoryView): string {
  for (let i = view.length - 1; i >= 0; i--) {
    const m = view.items[i]!.message;
    if (m.role === 'user' && !m.content.startsWith(NOTE_PREFIX)) return m.content;
  }
  return '';
}

/**
 * The most relevant remembered items, best first, at most `limit` (5) within `maxTokens`
 * (300); with `userId`, that user's only (as recall).
 */
export function relevantMemories(
  memory: ItemMemory,
  query: string,
  inject: { limit?: number; maxTokens?: number; userId?: string | undefined },
  counter: TokenCounter,
): string {
  const lines: string[] = [];
  const maxTokens = inject.maxTokens ?? 300;
  let used = 0;
  for (const { item } of memory.retrieve(query, { limit: inject.limit ?? 5, ...(inject.userId ? { userId: inject.userId } : {}) })) {
    const line = `- ${item.content} (importance ${item.importance})`;
    const tokens = counter.text(line) + 1;
    if (used + tokens > maxTokens) break;
    lines.push(line);
    used += tokens;
  }
  return lines.join('\n');
}
