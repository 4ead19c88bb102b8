/**
 * What the stand-in models read off a request's shape rather than its conversation: workmem's
 * tools under the names they were sent with, a tool's arguments from what the user asked, and
 * an answer in the structured output a client asked for (protocolFollower.ts uses them).
 */
import type { ChatRequest } from './wire.js';

/** workmem's tool `name` as sent: under its own name, or as `workmem_<name>` (repeated) when a client's tool took that name. */
export function ownTool(tools: ReadonlySet<string>, name: string): string | null {
  let found: string | null = null;
  for (let sent = name, depth = 0; depth < 4; sent = `workmem_${sent}`, depth++) if (tools.has(sent)) found = sent;
  return found;
}

/** A tool's arguments from what the user asked: a JSON object as it is, anything else as { input }. */
export function argumentsOf(input: string): string {
  const text = input.trim();
  if (text.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return JSON.stringify(parsed);
    } catch {
      // not JSON: the words themselves
    }
  }
  return JSON.stringify({ input });
}

/** An answer in the structured output asked for: its schema's first string property holds the text, the others empty. */
export function structured(request: ChatRequest, text: string): string {
  const format = request.response_format as { type?: string; json_schema?: { schema?: Schema } } | undefined;
  if (format?.type === 'json_object') return JSON.stringify({ answer: text });
  if (format?.type !== 'json_schema') return text;
  const schema = format.json_schema?.schema ?? {};
  const out: Record<string, unknown> = {};
  let placed = false;
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    const type = Array.isArray(property.type) ? property.type[0] : property.type;
    if (type === 'string' && !placed) {
      out[key] = text;
      placed = true;
    } else
      out[key] =
        type === 'string'
          ? ''
          : type === 'number' || type === 'integer'
            ? 0
            : type === 'boolean'
              ? false
              : type === 'array'
                ? []
                : type === 'null'
                  ? null
                  : {};
  }
  return JSON.stringify(out);
}

type Schema = { properties?: Record<string, { type?: string | string[] }> };
