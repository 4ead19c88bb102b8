/**
 * Bounds on what a model may pass to a tool. Arguments over MAX_TOOL_ARGUMENT_BYTES are
 * kept out of the history — carried on, they would overflow every later request — and
 * saved whole under working-memory/detail/tool-outputs/, so nothing is lost; the call
 * is then answered with an error that says why. JSON nested deeper than MAX_NESTING is
 * refused before parsing (serialising such a value overflows the stack).
 */
import type { AssistantMessage, ToolCall } from './messages.js';

export const MAX_TOOL_ARGUMENT_BYTES = 256 * 1024;
export const MAX_NESTING = 64;
const OMITTED = '_workmem_omitted';

/** The message as it is stored: oversized arguments replaced by a note naming where they went. */
export function boundToolArguments(
  message: AssistantMessage,
  save: (call: ToolCall) => string,
  maxBytes = MAX_TOOL_ARGUMENT_BYTES,
): AssistantMessage {
  if (!message.tool_calls?.some((c) => c.function.arguments.length > maxBytes / 3)) return message;
  const calls = message.tool_calls.map((call) => {
    const bytes = Buffer.byteLength(call.function.arguments);
    if (bytes <= maxBytes) return call;
    let kept: string;
    try {
      kept = `kept in ${save(call)}`;
    } catch (error) {
      kept = `they could not be saved (${(error instanceof Error ? error.message : String(error)).slice(0, 200)})`;
    }
    const note = `${size(bytes)} of arguments, over the ${size(maxBytes)} limit for one tool call; ${kept}`;
    return { ...call, function: { ...call.function, arguments: JSON.stringify({ [OMITTED]: note }) } };
  });
  return { ...message, tool_calls: calls };
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

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.round(bytes / 1024)} KB`;
}
