/**
 * Bring-your-own data: LongMemEval's published JSON (longmemeval_s.json, _m, _oracle; the user
 * downloads it, nothing is fetched here) as a suite. The file is one JSON array of instances;
 * of each we read question_id, question_type, question, answer, question_date,
 * haystack_dates and haystack_sessions (lists of {role, content} turns). An instance becomes
 * one conversation: the user turns of its sessions in order (the first of each session
 * carrying the session's date), then the question, dated, with the answer expected; a
 * question_id ending in `_abs` is an abstention question, scored as "not said". The model
 * under test writes its own replies: the haystack's assistant turns are not replayed.
 * A file that is not JSON, or an instance of another shape, is refused naming the line.
 */
import { readFileSync } from 'node:fs';
import { parse, printParseErrorCode, visit, type ParseError } from 'jsonc-parser';
import { z } from 'zod';
import { ConfigError } from '../settings/config.js';
import type { Conversation, EvalTurn, Suite } from './suite.js';

const Turn = z.object({ role: z.enum(['user', 'assistant']), content: z.string(), has_answer: z.boolean().optional() });
const Instance = z.object({
  question_id: z.string().min(1),
  question_type: z.string().min(1),
  question: z.string().min(1),
  answer: z.union([z.string(), z.number()]),
  question_date: z.string().optional(),
  haystack_dates: z.array(z.string()).optional(),
  haystack_sessions: z.array(z.array(Turn)),
});
type Instance = z.infer<typeof Instance>;

/** LongMemEval's file at `path` as a suite (its name: longmemeval). */
export function loadLongMemEval(path: string): Suite {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`--longmemeval ${path}: ${(error as Error).message}`);
  }
  return { name: 'longmemeval', conversations: parseLongMemEval(text, path) };
}

/** The conversations of a LongMemEval file's text; `name` is how errors name the file. */
export function parseLongMemEval(text: string, name: string): Conversation[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    const errors: ParseError[] = [];
    parse(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
    const first = errors[0];
    const where = first ? `line ${lineOf(text, first.offset)}` : 'its end';
    const what = first ? words(printParseErrorCode(first.error)) : 'it is not valid JSON';
    throw new ConfigError(`${name}: not valid JSON at ${where}: ${what}`);
  }
  if (!Array.isArray(json)) throw new ConfigError(`${name}: line 1: expected a JSON array of LongMemEval instances`);
  if (!json.length) throw new ConfigError(`${name}: the array holds no instances`);
  return json.map((raw, i) => {
    const parsed = Instance.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = [i, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
      const id =
        typeof (raw as { question_id?: unknown } | null)?.question_id === 'string'
          ? ` (${(raw as { question_id: string }).question_id})`
          : '';
      const field = issue.path.length
        ? issue.path
            .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
            .join('')
            .replace(/^\./, '')
        : 'the instance';
      throw new ConfigError(`${name}: line ${lineOfPath(text, path)}: instance ${i + 1}${id}: ${field}: ${issue.message}`);
    }
    return conversationOf(parsed.data);
  });
}

function conversationOf(instance: Instance): Conversation {
  const turns: EvalTurn[] = [];
  instance.haystack_sessions.forEach((session, s) => {
    const date = instance.haystack_dates?.[s];
    let first = true;
    for (const turn of session) {
      if (turn.role !== 'user') continue;
      turns.push({ text: first && date ? `(${date}) ${turn.content}` : turn.content });
      first = false;
    }
  });
  const abstention = instance.question_id.endsWith('_abs');
  turns.push({
    text: instance.question_date ? `(${instance.question_date}) ${instance.question}` : instance.question,
    question: abstention
      ? { category: 'abstention', expected: [], notSaid: true }
      : { category: instance.question_type, expected: [String(instance.answer)] },
  });
  const han = (instance.question.match(/\p{Script=Han}/gu) ?? []).length;
  return {
    id: instance.question_id,
    title: `LongMemEval ${instance.question_type}`,
    language: han > instance.question.length / 4 ? 'zh' : 'en',
    turns,
  };
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** The line where the value at `path` starts, or the deepest part of the path that exists. */
function lineOfPath(text: string, path: (string | number)[]): number {
  let best = { depth: -1, line: 1 };
  const at = (segments: (string | number)[], line: number): void => {
    const depth = segments.length;
    if (depth > best.depth && depth <= path.length && segments.every((s, i) => s === path[i])) best = { depth, line };
  };
  visit(text, {
    onObjectBegin: (_o, _l, startLine, _c, pathSupplier) => at(pathSupplier(), startLine + 1),
    onArrayBegin: (_o, _l, startLine, _c, pathSupplier) => at(pathSupplier(), startLine + 1),
    onObjectProperty: (property, _o, _l, startLine, _c, pathSupplier) => at([...pathSupplier(), property], startLine + 1),
    onLiteralValue: (_v, _o, _l, startLine, _c, pathSupplier) => at(pathSupplier(), startLine + 1),
  });
  return best.line;
}

/** "CommaExpected" → "comma expected". */
function words(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}
