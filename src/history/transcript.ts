/**
 * Readable markdown transcripts of history items, for the detail/ files that compaction
 * archives to. Verbatim: every message's full text and every tool call's arguments.
 */
import { yieldIfBusy } from '../runtime/fairYield.js';
import type { HistoryItem } from './historyView.js';

export function renderTranscript(title: string, preface: string, items: readonly HistoryItem[]): string {
  const out = head(title, preface);
  let turn = -1;
  for (const item of items) turn = renderItem(out, item, turn);
  return out.join('\n');
}

/** The items rendered between which the loop may turn: an archive of a 20k-message conversation is megabytes. */
const ITEMS_PER_SLICE = 256;

/**
 * renderTranscript, a slice of items at a time, letting the loop turn between slices when
 * it has been busy (yieldIfBusy): the other sessions in the process go on meanwhile.
 */
export async function renderTranscriptInSlices(title: string, preface: string, items: readonly HistoryItem[]): Promise<string> {
  // Joined a slice at a time: one join of megabytes of lines would hold the loop too.
  const slices = [head(title, preface).join('\n')];
  let turn = -1;
  for (let i = 0; i < items.length; i += ITEMS_PER_SLICE) {
    const out: string[] = [];
    for (const item of items.slice(i, i + ITEMS_PER_SLICE)) turn = renderItem(out, item, turn);
    slices.push(out.join('\n'));
    await yieldIfBusy();
  }
  return slices.join('\n');
}

function head(title: string, preface: string): string[] {
  return [`# ${title}`, '', preface, ''];
}

/** Appends `item`'s lines to `out` (a turn heading first when its turn is not `turn`); returns its turn. */
function renderItem(out: string[], item: HistoryItem, turn: number): number {
  if (item.turn !== turn) out.push(`## Turn ${item.turn}`, '');
  const m = item.message;
  switch (m.role) {
    case 'user':
      out.push('**User:**', '', fence(m.content), '');
      break;
    case 'system':
      out.push('**System:**', '', fence(m.content), '');
      break;
    case 'assistant':
      if (m.content) out.push('**Assistant:**', '', fence(m.content), '');
      for (const call of m.tool_calls ?? []) {
        out.push(`**Assistant called \`${call.function.name}\`** (${call.id}):`, '', fence(call.function.arguments, 'json'), '');
      }
      break;
    case 'tool':
      out.push(`**Tool result** (${m.tool_call_id}):`, '', fence(m.content), '');
      break;
  }
  return item.turn;
}

/** A fenced block long enough that the content cannot close it. */
function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`{3,}/g)].map((m) => m[0].length));
  const bar = '`'.repeat(longest + 1);
  return `${bar}${lang}\n${text}\n${bar}`;
}
