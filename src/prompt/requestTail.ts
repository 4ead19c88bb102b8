/**
 * The ephemeral end of a request: <context_meta>, the working memory's changes since the
 * copy the request carries in its place (memoryRefresh 'when-cheap', memoryUpdate.ts) and,
 * when due, the reminder. It is appended to the last message of the request only and never
 * stored in the history.
 */
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import type { ReminderDue } from '../memory/reminderTracker.js';
import { OVERVIEW_PATH } from '../memory/memoryRules.js';

export interface ContextMeta {
  tokens_used: number;
  tokens_max: number;
  tokens_percent: number;
  /** The session's history as it stands (after compaction), whether sent or not. */
  messages_in_history: number;
  /** How many of those this request carries (phase 2 and hybrid send only the recent ones). */
  messages_sent: number;
  working_memory_size: number;
}

export const TAIL_SEPARATOR = '\n\n';
export const DETAIL_PATH = 'working-memory/detail/';

export function renderTail(
  meta: ContextMeta,
  reminder: ReminderDue | null,
  language: MemoryLanguage,
  today: string | null = null,
  toolPrefix = '',
  memoryUpdate: string | null = null,
): string {
  const block = `<context_meta>\n${JSON.stringify(meta)}\n</context_meta>`;
  const update = memoryUpdate ? `\n\n${memoryUpdate}` : '';
  return reminder
    ? `${TAIL_SEPARATOR}${block}${update}\n\n${reminderText(reminder, meta, language, today, toolPrefix)}`
    : `${TAIL_SEPARATOR}${block}${update}`;
}

const HEADINGS: Record<MemoryLanguage, Record<ReminderDue['level'], string>> = {
  en: {
    gentle: 'Reminder: working memory not updated recently',
    firm: '⚠️ WORKING MEMORY UPDATE NEEDED',
    urgent: '🚨 UPDATE YOUR WORKING MEMORY NOW, before anything else',
  },
  zh: {
    gentle: '提醒：working memory 已有一段时间没有更新',
    firm: '⚠️ WORKING MEMORY UPDATE NEEDED',
    urgent: '🚨 立即更新 working memory，先于其他任何操作',
  },
};

/** `toolPrefix`: the prefix workmem's tools are sent with (toolNaming.ts): the reminder names them as sent. */
export function reminderText(
  due: ReminderDue,
  meta: ContextMeta,
  language: MemoryLanguage,
  today: string | null = null,
  toolPrefix = '',
): string {
  const p = toolPrefix;
  const kb = (meta.working_memory_size / 1024).toFixed(2);
  const heading = HEADINGS[language][due.level];
  // The session's day, so the model can use the name as it stands.
  const date = today ? `-${today}` : '';
  if (language === 'zh') {
    const why =
      due.reason === 'compaction'
        ? '历史刚被压缩：请把仍然需要的信息记录到 working memory。'
        : due.reason === 'leaving' && due.leaving
          ? `第 ${turns(due.leaving)} 轮对话即将移出请求，而你在它们之后还没有更新 working memory：请记下其中仍然需要的信息。`
          : `你已经连续 ${due.rounds} 轮没有更新 working memory 了。`;
    return `<memory_reminder level="${due.level}">
${heading}

${why}
当前上下文状态:
- Token 使用: ${meta.tokens_percent}% (${meta.tokens_used} / ${meta.tokens_max})
- 历史消息: ${meta.messages_in_history} 条 (本次请求发送 ${meta.messages_sent} 条)
- Working Memory 大小: ${kb} KB

建议操作:
1. 总结已完成的任务，归档到 ${DETAIL_PATH}completed${date}.md
2. 更新"当前任务"状态和进度
3. 删除过时信息，保留最近决策
4. 将详细讨论移到 ${DETAIL_PATH} 目录

使用 ${p}write 或 ${p}edit tool 更新: ${OVERVIEW_PATH}
</memory_reminder>`;
  }
  const why =
    due.reason === 'compaction'
      ? 'The history was just compacted: record anything you still need in your working memory.'
      : due.reason === 'leaving' && due.leaving
        ? `Turn${due.leaving.from === due.leaving.to ? '' : 's'} ${turns(due.leaving)} of this conversation ${due.leaving.from === due.leaving.to ? 'is' : 'are'} about to leave what requests carry, and you have not updated your working memory since: record anything you still need from ${due.leaving.from === due.leaving.to ? 'it' : 'them'}.`
        : `You have not updated your working memory for ${due.rounds} requests.`;
  return `<memory_reminder level="${due.level}">
${heading}

${why}
Context now:
- Tokens: ${meta.tokens_percent}% (${meta.tokens_used} / ${meta.tokens_max})
- Messages in history: ${meta.messages_in_history} (${meta.messages_sent} sent in this request)
- Working memory size: ${kb} KB

Suggested actions:
1. Summarise finished tasks and archive them to ${DETAIL_PATH}completed${date}.md
2. Update the current task and its progress
3. Remove outdated information; keep recent decisions
4. Move detailed discussions to ${DETAIL_PATH}

Update it with the ${p}write or ${p}edit tool: ${OVERVIEW_PATH}
</memory_reminder>`;
}

/** "12" or "12–15". */
function turns(range: { from: number; to: number }): string {
  return range.from === range.to ? String(range.from) : `${range.from}–${range.to}`;
}
