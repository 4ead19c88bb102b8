/**
 * The Chat Completions wire as the proxy reads a client's request: its system messages as
 * the instructions, the rest as a conversation of workmem's ChatMessage (texts of content
 * parts joined; a part that is not text is refused, never dropped), its tools as ToolSpec
 * with the client's own definitions kept to send upstream as given, and the parameters that
 * pass through untouched. What workmem builds (messages, tools, the output limit, streaming)
 * replaces the client's own. Every message is checked when the request is read; one is
 * converted only when the session reads it (a client sends its whole conversation on every
 * request, and the session compares few of the messages it already holds).
 */
import type { HostConversation } from '../../machines/sessionTypes.js';
import { shapeOf as shapeOfMessage } from '../history/hostLine.js';
import { keptPositions, type KeptPositions } from '../history/keptPositions.js';
import { PLAIN_SHAPES, type ChatMessage, type MessageShape, type ToolCall } from '../history/messages.js';
import type { ToolSpec } from '../tools/tool.js';
import { promptProblem } from '../llm/captureBounds.js';

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
  /** The request as the client sent it, for a request passed through without a session (its stream flags aside). */
  body: Record<string, unknown>;
  model: string;
  /** The client's system (and developer) messages, joined: none gives undefined. */
  instructions: string | undefined;
  /** Those messages one by one, with their roles: sent upstream as the client gave them, workmem's part after the last. */
  instructionParts: { role: 'system' | 'developer'; content: string; name?: string }[];
  /** The rest of its messages, in order. */
  conversation: WireConversation;
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
  const raw = b.messages as unknown[];
  const system: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const role = roleOf(raw[i], i);
    if (role === 'system') system.push(i);
  }
  const instructionParts = system.map((i) => {
    const m = raw[i] as { role: 'system' | 'developer'; name?: unknown };
    const { content, name } = messageOf(raw[i], 'system') as { content: string; name?: string };
    return { role: m.role, content, ...(name !== undefined ? { name } : {}) };
  });
  const instructions = instructionParts.map((p) => p.content).join('\n\n') || undefined;
  const { tools, wireTools } = toolsOf(b.tools);
  const params: Record<string, unknown> = {};
  const given: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) {
    if (!OWN.has(k)) params[k] = v;
    if (k !== 'stream' && k !== 'stream_options') given[k] = v;
  }
  const limit = (name: 'max_tokens' | 'max_completion_tokens') => {
    const v = b[name];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new BadRequestError(`${name} must be a positive whole number`, name);
    return { name, value: v };
  };
  const options = b.stream_options as { include_usage?: unknown } | undefined;
  return {
    params,
    body: given,
    model: b.model,
    instructions,
    instructionParts,
    // Without instructions the conversation is every message, as a host loop's split leaves it.
    conversation: new WireConversation(raw, keptPositions(raw.length, instructions === undefined ? [] : system)),
    tools,
    wireTools,
    stream: b.stream === true,
    streamUsage: options?.include_usage === true,
    maxTokens: limit('max_completion_tokens') ?? limit('max_tokens'),
    user: typeof b.user === 'string' && b.user.trim() ? b.user : null,
  };
}

/** Checks a content that may be parts (text parts only: another part, an image, audio or a file, is refused). */
function checkText(content: unknown, where: string, allowNull = false): void {
  if (typeof content === 'string') return;
  if (content === null || content === undefined) {
    if (allowNull) return;
    throw new BadRequestError(`${where}.content is required`, `${where}.content`);
  }
  if (!Array.isArray(content)) throw new BadRequestError(`${where}.content must be text or an array of parts`, `${where}.content`);
  content.forEach((part, i) => {
    const p = part as { type?: unknown; text?: unknown; refusal?: unknown };
    if (p?.type === 'text' && typeof p.text === 'string') return;
    if (p?.type === 'refusal' && typeof p.refusal === 'string') return;
    throw new BadRequestError(
      `${where}.content[${i}] is a ${JSON.stringify(p?.type)} part: workmem serve keeps text only (the session's log holds text), so it refuses the request rather than drop the part`,
      `${where}.content`,
      'unsupported_content',
    );
  });
}

/** A checked content's text: its parts joined. */
function textOf(content: unknown): string | null {
  if (typeof content === 'string' || content === null || content === undefined) return (content as string | undefined) ?? null;
  return (content as { type: 'text' | 'refusal'; text?: string; refusal?: string }[])
    .map((p) => (p.type === 'text' ? p.text : p.refusal))
    .join('\n');
}

/** Checks a wire message: its role as workmem names it. */
function roleOf(raw: unknown, index: number): ChatMessage['role'] {
  const m = raw as Record<string, unknown> | null;
  // Most messages are text and call nothing: checked at once.
  if (typeof m?.content === 'string' && m.tool_calls === undefined && m.tool_call_id === undefined) {
    if (m.role === 'user') return checkedUser(m.content, index);
    if (m.role === 'assistant') return m.role;
    if (m.role === 'system' || m.role === 'developer') return 'system';
  }
  return checkedRole(raw, `messages[${index}]`);
}

/** A user message the session could not keep (too large) is refused with the request: nothing of it is recorded. */
function checkedUser(text: string, index: number): 'user' {
  const problem = promptProblem(text);
  if (problem) throw new BadRequestError(`messages[${index}]: ${problem}`, `messages[${index}].content`, 'message_too_large');
  return 'user';
}

function checkedRole(raw: unknown, where: string): ChatMessage['role'] {
  const m = raw as Record<string, unknown> | null;
  switch (m?.role) {
    case 'system':
    case 'developer':
      checkText(m.content, where);
      return 'system';
    case 'user':
      checkText(m.content, where);
      return checkedUser(textOf(m.content) ?? '', Number(/\d+/.exec(where)?.[0]));
    case 'assistant':
      checkText(m.content, where, true);
      if (m.tool_calls !== undefined && m.tool_calls !== null) checkCalls(m.tool_calls, where);
      return 'assistant';
    case 'tool':
      if (typeof m.tool_call_id !== 'string' || !m.tool_call_id)
        throw new BadRequestError(`${where}.tool_call_id is required`, `${where}.tool_call_id`);
      checkText(m.content, where);
      return 'tool';
    default:
      throw new BadRequestError(
        `${where}.role ${JSON.stringify(m?.role)} is not one of system, developer, user, assistant, tool`,
        `${where}.role`,
      );
  }
}

function checkCalls(raw: unknown, where: string): void {
  if (!Array.isArray(raw)) throw new BadRequestError(`${where}.tool_calls must be an array`, `${where}.tool_calls`);
  raw.forEach((c, i) => {
    const call = c as WireCall;
    if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string' || typeof call.function.arguments !== 'string')
      throw new BadRequestError(`${where}.tool_calls[${i}] needs an id and a function with a name and arguments`, `${where}.tool_calls`);
  });
}

type WireCall = { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
type WireMessage = {
  content?: unknown;
  name?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[] | null;
  tool_call_id?: string;
};

/** A checked wire message's role, as workmem names it. */
function roleAt(raw: unknown): ChatMessage['role'] {
  const role = (raw as { role: ChatMessage['role'] | 'developer' }).role;
  return role === 'developer' ? 'system' : role;
}

/** A checked wire message as workmem's ChatMessage. */
function messageOf(raw: unknown, role: ChatMessage['role']): ChatMessage {
  const m = raw as WireMessage;
  // A participant's name is kept and sent as given.
  const name = typeof m.name === 'string' ? { name: m.name } : {};
  switch (role) {
    case 'system':
    case 'user':
      return { role, content: textOf(m.content)!, ...name };
    case 'assistant': {
      const calls = (m.tool_calls ?? []).map((c): ToolCall => ({
        id: c.id,
        type: 'function',
        function: { name: c.function.name, arguments: c.function.arguments },
      }));
      return { role, content: textOf(m.content), ...(calls.length ? { tool_calls: calls } : {}), ...name };
    }
    case 'tool':
      return { role, tool_call_id: m.tool_call_id!, content: textOf(m.content)! };
  }
}

/**
 * The client's conversation, checked, read by index: a message is converted when it is read,
 * its shape (role, calls, the call it answers) read from the wire as it is. Messages workmem
 * added in this exchange (its tools' calls and results) follow the client's.
 */
export class WireConversation implements HostConversation {
  readonly length: number;

  constructor(
    private readonly raw: readonly unknown[],
    /** Where the client's kept messages are on the wire (its system messages, the instructions, left out). */
    private readonly kept: KeptPositions,
    private readonly added: readonly ChatMessage[] = [],
  ) {
    this.length = kept.length + added.length;
  }

  at(index: number): ChatMessage {
    if (index >= this.kept.length) return this.added[index - this.kept.length]!;
    const m = this.raw[this.kept.at(index)];
    return messageOf(m, roleAt(m));
  }

  /**
   * What stands for a message from request to request (HostConversation.identity): a text
   * message's text, which a kept-open session compares instead of hashing it again (the
   * client sends the same texts; an edited one is another text); the message itself otherwise.
   */
  identity(index: number): unknown {
    if (index >= this.kept.length) return this.added[index - this.kept.length];
    const m = this.raw[this.kept.at(index)] as WireMessage & { role?: unknown };
    return typeof m.content === 'string' && m.tool_calls === undefined && m.tool_call_id === undefined ? m.content : m;
  }

  shape(index: number): MessageShape {
    if (index >= this.kept.length) return shapeOfMessage(this.added[index - this.kept.length]!);
    const w = this.kept.at(index);
    const role = roleAt(this.raw[w]);
    const m = this.raw[w] as WireMessage;
    if (role === 'tool') return { role, toolCallId: m.tool_call_id! };
    if (role === 'assistant' && m.tool_calls?.length)
      return { role, calls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name })) };
    return PLAIN_SHAPES[role as 'system' | 'user' | 'assistant'];
  }

  /** This conversation and, after it, messages of workmem's exchange. */
  with(messages: readonly ChatMessage[]): WireConversation {
    return new WireConversation(this.raw, this.kept, [...this.added, ...messages]);
  }
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

/**
 * The system message workmem built (the client's instructions first, its own part after them)
 * as the client's system and developer messages were: each its own message in its role, in
 * their order, workmem's part after the last. One system message (the usual) is sent as it is.
 */
export function instructionMessages(
  parts: ClientRequest['instructionParts'],
  instructions: string | undefined,
  system: ChatMessage,
): Record<string, unknown>[] {
  const head = instructions?.trim() ?? '';
  if (system.role !== 'system' || parts.length === 0 || (parts.length === 1 && parts[0]!.role === 'system' && !parts[0]!.name))
    return [system];
  if (!system.content.startsWith(head)) return [system];
  const own = system.content.slice(head.length);
  // The instructions were joined and trimmed: the first part's start and the last part's end as they are in it.
  return parts.map((p, i) => {
    let content = i === 0 ? p.content.trimStart() : p.content;
    if (i === parts.length - 1) content = content.trimEnd() + own;
    return { role: p.role, content, ...(p.name !== undefined ? { name: p.name } : {}) };
  });
}

/** The tools of an upstream request: the client's as it sent them, workmem's from their specs. */
export function wireToolsOf(specs: readonly ToolSpec[], client: ReadonlyMap<string, WireTool>): WireTool[] {
  return specs.map(
    (t) => client.get(t.name) ?? { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } },
  );
}
