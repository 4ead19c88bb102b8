/**
 * Bounds on what a model response and a user prompt may bring into the history, beside
 * the argument bound of toolArguments.ts. Whatever is stored is tokenized once and sent
 * with every later request, so one 10 MB tool name or answer would freeze the counter and
 * overflow every request after it. A tool name off the pattern is replaced by a stand-in
 * and its call answered with an error; an answer over the cap is kept whole in detail/
 * and capped in the history; a prompt over the cap is refused before anything is written
 * (the user is there to split it, and a cut question would be answered as if whole).
 */
import type { AssistantMessage, ToolCall } from '../history/messages.js';
import { byteSize as size } from '../format/byteSize.js';
import type { ResponseSaves } from '../tools/responseSaves.js';

export const MAX_TOOL_NAME_CHARS = 256;
/** The Chat Completions rule, as defineTool checks it. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Stored in place of a name that is not one; its call is answered with the problem. */
export const INVALID_TOOL_NAME = 'invalid_tool_name';
const PROBLEM = '_workmem_invalid_name';
export const MAX_ANSWER_BYTES = 256 * 1024;
export const MAX_PROMPT_BYTES = 1024 * 1024;

/**
 * The message with bad tool names replaced and over-long text capped. `saves` keeps a
 * refused call whole (name and arguments) within the response's budget, `saveText` the
 * whole answer (returning where).
 */
export async function boundResponse(
  message: AssistantMessage,
  saves: ResponseSaves,
  saveText: (text: string) => string | Promise<string>,
): Promise<AssistantMessage> {
  let calls = message.tool_calls;
  if (calls?.some((c) => !TOOL_NAME.test(c.function.name))) {
    const bounded: ToolCall[] = [];
    for (const call of calls) bounded.push(await boundName(call, saves));
    calls = bounded;
  }
  const content = typeof message.content === 'string' ? await boundAnswer(message.content, saveText) : message.content;
  if (calls === message.tool_calls && content === message.content) return message;
  return { ...message, content, ...(calls ? { tool_calls: calls } : {}) };
}

/** Text over MAX_ANSWER_BYTES: its head and a note naming where the whole text went. */
export async function boundAnswer(
  text: string,
  saveText: (text: string) => string | Promise<string>,
  maxBytes = MAX_ANSWER_BYTES,
): Promise<string> {
  if (text.length <= maxBytes / 3) return text;
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return text;
  const head = Buffer.from(text)
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return `${head}\n\n[Answer cut at ${size(maxBytes)} of ${size(bytes)}; kept whole in ${await saveText(text)}]`;
}

/** Why `text` cannot be a prompt, or null. */
export function promptProblem(text: string, maxBytes = MAX_PROMPT_BYTES): string | null {
  if (text.length <= maxBytes / 3) return null;
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return null;
  return `the prompt is ${size(bytes)}; a prompt may be at most ${size(maxBytes, 0)}: save long material to a file and refer to it, or send it in parts`;
}

/** The problem a stand-in call carries (see boundName), or null for any other call. */
export function invalidNameProblem(call: ToolCall): string | null {
  if (call.function.name !== INVALID_TOOL_NAME) return null;
  try {
    const note = (JSON.parse(call.function.arguments) as Record<string, unknown>)[PROBLEM];
    return typeof note === 'string' ? note : null;
  } catch {
    return null;
  }
}

async function boundName(call: ToolCall, saves: ResponseSaves): Promise<ToolCall> {
  const name = call.function.name;
  if (TOOL_NAME.test(name)) return call;
  const problem =
    name.length > MAX_TOOL_NAME_CHARS
      ? `a tool name of ${name.length < 1024 ? `${name.length} characters` : size(Buffer.byteLength(name))}, over the ${MAX_TOOL_NAME_CHARS}-character limit`
      : `the tool name ${JSON.stringify(name)} is not one (1-64 letters, digits, _ or -)`;
  const kept = await saves.keep({
    ...call,
    function: { name: INVALID_TOOL_NAME, arguments: JSON.stringify({ name, arguments: call.function.arguments }) },
  });
  const note = `${problem}; the call was not run (${kept})`;
  return { ...call, function: { name: INVALID_TOOL_NAME, arguments: JSON.stringify({ [PROBLEM]: note }) } };
}
