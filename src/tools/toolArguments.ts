/**
 * Bounds on what a model may pass to a tool. Arguments over MAX_TOOL_ARGUMENT_BYTES are
 * kept out of the history — carried on, they would overflow every later request — and
 * saved whole under working-memory/detail/tool-outputs/, so nothing is lost; the call
 * is then answered with an error that says why. One response is bounded as a whole too:
 * past MAX_RESPONSE_ARGUMENT_BYTES of arguments in the log, or the response's save budget
 * (responseSaves.ts, shared with calls refused for their name), further calls are dropped
 * (not run, not kept) with a note saying so — without that, hundreds of calls each under
 * the limit put tens of MB in messages.jsonl. JSON nested deeper than MAX_NESTING is
 * refused before parsing (serialising such a value overflows the stack).
 */
import type { AssistantMessage, ToolCall } from '../history/messages.js';
import { byteSize as size } from '../format/byteSize.js';
import type { ResponseSaves } from './responseSaves.js';

export const MAX_TOOL_ARGUMENT_BYTES = 256 * 1024;
export const MAX_RESPONSE_ARGUMENT_BYTES = 2 * 1024 * 1024;
export const MAX_NESTING = 64;
const OMITTED = '_workmem_omitted';

export interface ArgumentLimits {
  /** One call's arguments kept in the history. */
  perCall: number;
  /** All calls' arguments of one response kept in the history. */
  perResponse: number;
}

const LIMITS: ArgumentLimits = { perCall: MAX_TOOL_ARGUMENT_BYTES, perResponse: MAX_RESPONSE_ARGUMENT_BYTES };

/** The message as it is stored: oversized arguments replaced by a note naming where they went, or that they were dropped. */
export async function boundToolArguments(
  message: AssistantMessage,
  saves: ResponseSaves,
  limits: Partial<ArgumentLimits> = {},
): Promise<AssistantMessage> {
  const { perCall, perResponse } = { ...LIMITS, ...limits };
  const calls = message.tool_calls;
  if (!calls) return message;
  let length = 0;
  for (const call of calls) length += call.function.arguments.length;
  // Fast path: UTF-8 takes at most 3 bytes per UTF-16 unit.
  if (length * 3 <= perResponse && !calls.some((c) => c.function.arguments.length * 3 > perCall)) return message;
  let kept = 0;
  const bounded: ToolCall[] = [];
  for (const call of calls) bounded.push(await boundCall(call));
  return { ...message, tool_calls: bounded };

  async function boundCall(call: ToolCall): Promise<ToolCall> {
    const bytes = Buffer.byteLength(call.function.arguments);
    let note: string;
    if (bytes <= perCall && kept + bytes <= perResponse) {
      kept += bytes;
      return call;
    } else if (bytes <= perCall) {
      note = `${size(bytes)} of arguments dropped: this response's tool calls passed ${size(perResponse)} of arguments in total; the call was not run and its arguments were not kept. Send fewer or smaller calls per response`;
    } else {
      note = `${size(bytes)} of arguments, over the ${size(perCall)} limit for one tool call; ${await saves.keep(call)}`;
    }
    return { ...call, function: { ...call.function, arguments: JSON.stringify({ [OMITTED]: note }) } };
  }
}

/** Why a call's arguments cannot be used as they are, or null. */
export function argumentProblem(args: string): string | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < args.length; i++) {
    const c = args.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > MAX_NESTING) return `its arguments nest deeper than ${MAX_NESTING} levels`;
    } else if (c === 125 || c === 93) depth--;
  }
  return null;
}

/** The note left by boundToolArguments, if `args` is one. */
export function omittedArguments(args: unknown): string | null {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return null;
  const note = (args as Record<string, unknown>)[OMITTED];
  return typeof note === 'string' ? note : null;
}
