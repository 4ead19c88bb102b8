/**
 * The host tool every arm of the eval offers: fetch_document, which returns a long
 * document (about 3,000 tokens) made from its name, the same name giving the same text.
 * Its outputs are what pushes a conversation past the window's thresholds, as tool output
 * does in real sessions; no question asks about their content.
 */
import { z } from 'zod';
import { defineTool, type Tool } from '../tools/tool.js';

/** Lines per document: about 3,000 tokens in either language. */
const LINES = 110;

/** The fetch_document tool, writing its documents in the conversation's language. */
export function fetchDocumentTool(language: 'en' | 'zh'): Tool {
  return defineTool({
    name: 'fetch_document',
    description: "Fetch one of the user's documents by its name and return its full text.",
    parameters: z.object({ input: z.string().describe('The name of the document, as the user gave it') }),
    execute: ({ input }) => documentText(input, language),
  });
}

/** The document fetch_document returns for a name. */
export function documentText(name: string, language: 'en' | 'zh'): string {
  const title = name.trim().replace(/^the\s+/i, '') || 'document';
  let state = seedOf(title);
  const next = (n: number): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % n;
  };
  const lines = Array.from({ length: LINES }, (_, i) =>
    language === 'zh'
      ? `第${i + 1}条（${title}）：编号${1000 + next(9000)}，${ZH_ITEMS[next(ZH_ITEMS.length)]}，数量${1 + next(40)}，状态：${ZH_STATES[next(ZH_STATES.length)]}，备注：${ZH_NOTES[next(ZH_NOTES.length)]}。`
      : `${i + 1}. ${title}, entry ${1000 + next(9000)}: ${EN_ITEMS[next(EN_ITEMS.length)]}, quantity ${1 + next(40)}, status ${EN_STATES[next(EN_STATES.length)]}; note: ${EN_NOTES[next(EN_NOTES.length)]}.`,
  );
  return `${language === 'zh' ? `《${title}》全文` : `Full text of "${title}"`}\n\n${lines.join('\n')}`;
}

const EN_ITEMS = [
  'line item',
  'schedule change',
  'cost estimate',
  'reviewer comment',
  'measurement',
  'log record',
  'contract clause',
  'task',
];
const EN_STATES = ['open', 'done', 'pending review', 'on hold', 'approved', 'rejected'];
const EN_NOTES = [
  'checked against last week and unchanged',
  'needs a second look before Friday',
  'copied from the previous version without edits',
  'flagged by the automated check as unusual',
  'confirmed by phone with the other party',
  'no action needed for now',
];
const ZH_ITEMS = ['明细项', '进度调整', '费用估算', '审核意见', '测量记录', '日志条目', '合同条款', '待办任务'];
const ZH_STATES = ['未处理', '已完成', '待审核', '暂缓', '已批准', '已退回'];
const ZH_NOTES = ['与上周核对无变化', '周五前需要再看一遍', '沿用上一版未修改', '自动检查标记为异常', '已电话确认', '暂时无需处理'];

function seedOf(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}
