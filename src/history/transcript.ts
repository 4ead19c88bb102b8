/**
 * Readable markdown transcripts of history items, for the detail/ files that compaction
 * archives to. Verbatim: every message's full text and every tool call's arguments.
 */
import type { HistoryItem } from './historyView.js';

export function renderTranscript(title: string, preface: string, items: readonly HistoryItem[]): string {
  const out: string[] = [`# ${title}`, '', preface, ''];
  let turn = -1;
  for (const item of items) {
    if (item.turn !== turn) {
      turn = item.turn;
      out.push(`## Turn ${turn}`, '');
    }
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
  }
  return out.join('\n');
}

/** A fenced block long enough that the content cannot close it. */
function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`{3,}/g)].map((m) => m[0].length));
  const bar = '`'.repeat(longest + 1);
  return `${bar}${lang}\n${text}\n${bar}`;
}
