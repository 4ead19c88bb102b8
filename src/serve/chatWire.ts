/**
 * The Chat Completions wire as the proxy reads a client's request: its messages as
 * workmem's ChatMessage (texts of content parts joined; a part that is not text is refused,
 * never dropped), its tools as ToolSpec with the client's own definitions kept to send
 * upstream as given, and the parameters that pass through untouched. What workmem builds
 * (messages, tools, the output limit, streaming) replaces the client's own.
 */
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { ToolSpec } from '../tools/tool.js';

/** A request the proxy cannot take: answered 400 with an OpenAI-shaped body naming what is wrong. */
export class BadRequestError extends Error {
  override name = 'BadRequestError';
  constructor(
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

/** A client's tool as it sent it: sent upstream as is (its `strict`, its schema), by name. */
export type WireTool = { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown> } };

export interface ClientRequest {
  /** What passes upstream untouched (model, temperature, tool_choice, user, …). */
  params: Record<string, unknown>;
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** The client's tools as it sent them, by name. */
  wireTools: Map<string, WireTool>;
  stream: boolean;
  /** The client asked for the usage chunk at the end of the stream. */
  streamUsage: boolean;
  /** The client's own output limit, and the parameter it used. */
  maxTokens: { name: 'max_tokens' | 'max_completion_tokens'; value: number } | null;
  user: string | null;
}

/** Replaced by what workmem builds, or read here. */
const OWN = new Set(['messages', 'tools', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens']);

export function readClientRequest(body: unknown): ClientRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || !b.model) throw new BadRequestError('model is required', 'model');
  if (!Array.isArray(b.messages) || b.messages.length === 0) throw new BadRequestError('messages must be a non-empty array', 'messages');
  if (b.n !== undefined && b.n !== 1) throw new BadRequestError('workmem serve answers one choice per request (n = 1)', 'n');
  if (b.functions !== undefined || b.function_call !== undefined)
    throw new BadRequestError('functions and function_call are not served: use tools and tool_choice', 'functions');
  const messages = b.messages.map((m, i) => messageOf(m, `messages[${i}]`));
  const { tools, wireTools } = toolsOf(b.tools);
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) if (!OWN.has(k)) params[k] = v;
  const limit = (name: 'max_tokens' | 'max_completion_tokens') => {
    const v = b[name];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new BadRequestError(`${name} must be a positive whole number`, name);
    return { name, value: v };
  };
  const options = b.stream_options as { include_usage?: unknown } | undefined;
  return {
    params,
    model: b.model,
    messages,
    tools,
    wireTools,
    stream: b.stream === true,
    streamUsage: options?.include_usage === true,
    maxTokens: limit('max_completion_tokens') ?? limit('max_tokens'),
    user: typeof b.user === 'string' && b.user.trim() ? b.user : null,
  };
}

/** Text of a content that may be parts: text parts joined; another part (an image, audio, a file) is refused. */
function textOf(content: unknown, where: string, allowNull = false): string | null {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) {
    if (allowNull) return null;
    throw new BadRequestError(`${where}.content is required`, `${where}.content`);
  }
  if (!Array.isArray(content)) throw new BadRequestError(`${where}.content must be text or an array of parts`, `${where}.content`);
  return content
    .map((part, i) => {
      const p = part as { type?: unknown; text?: unknown; refusal?: unknown };
      if (p?.type === 'text' && typeof p.text === 'string') return p.text;
      if (p?.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      throw new BadRequestError(
        `${where}.content[${i}] is a ${JSON.stringify(p?.type)} part: workmem serve keeps text only (the session's log holds text), so it refuses the request rather than drop the part`,
        `${where}.content`,
        'unsupported_content',
      );
    })
    .join('\n');
}

function messageOf(raw: unknown, where: string): ChatMessage {
  const m = raw as Record<string, unknown> | null;
  switch (m?.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: textOf(m.content, where)! };
    case 'user':
      return { role: 'user', content: textOf(m.content, where)! };
    case 'assistant': {
      const calls = m.tool_calls === undefined || m.tool_calls === null ? [] : callsOf(m.tool_calls, where);
      return { role: 'assistant', content: textOf(m.content, where, true), ...(calls.length ? { tool_calls: calls } : {}) };
    }
    case 'tool':
      if (typeof m.tool_call_id !== 'string' || !m.tool_call_id)
        throw new BadRequestError(`${where}.tool_call_id is required`, `${where}.tool_call_id`);
      return { role: 'tool', tool_call_id: m.tool_call_id, content: textOf(m.content, where)! };
    default:
      throw new BadRequestError(
        `${where}.role ${JSON.stringify(m?.role)} is not one of system, developer, user, assistant, tool`,
        `${where}.role`,
      );
  }
}

function callsOf(raw: unknown, where: string): ToolCall[] {
  if (!Array.isArray(raw)) throw new BadRequestError(`${where}.tool_calls must be an array`, `${where}.tool_calls`);
  return raw.map((c, i) => {
    const call = c as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
    if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string' || typeof call.function.arguments !== 'string')
      throw new BadRequestError(`${where}.tool_calls[${i}] needs an id and a function with a name and arguments`, `${where}.tool_calls`);
    return { id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } };
  });
}

function toolsOf(raw: unknown): { tools: ToolSpec[]; wireTools: Map<string, WireTool> } {
  const wireTools = new Map<string, WireTool>();
  if (raw === undefined || raw === null) return { tools: [], wireTools };
  if (!Array.isArray(raw)) throw new BadRequestError('tools must be an array', 'tools');
  const tools = raw.map((t, i) => {
    const tool = t as WireTool;
    if (tool?.type !== 'function' || typeof tool.function?.name !== 'string')
      throw new BadRequestError(`tools[${i}] must be a function tool with a name`, 'tools');
    wireTools.set(tool.function.name, tool);
    return { name: tool.function.name, description: tool.function.description ?? '', parameters: tool.function.parameters ?? {} };
  });
  return { tools, wireTools };
}

/** The tools of an upstream request: the client's as it sent them, workmem's from their specs. */
export function wireToolsOf(specs: readonly ToolSpec[], client: ReadonlyMap<string, WireTool>): WireTool[] {
  return specs.map(
    (t) => client.get(t.name) ?? { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } },
  );
}
