/**
 * The test server's Anthropic Messages API (POST /v1/messages): `system` and `messages`
 * (text, tool_use and tool_result blocks, thinking blocks) are read as the Chat Completions
 * body the policy reads, the system blocks one system prompt; the prompt cache reads each
 * system block as its own message and every `cache_control` mark on the message it is in
 * (its breakpoints); the answer
 * is one `message`, or its SSE events in order (message_start, ping, each content block's
 * start, deltas and stop, message_delta with the stop reason and usage, message_stop). Its
 * usage says what the prompt cache read and wrote (input_tokens is what it did neither with).
 * As Anthropic does, it refuses a request without max_tokens, a tool_use not answered by a
 * tool_result in the next message, and, with thinking on, a final assistant message of a
 * tool loop that does not open with a thinking block, or one whose signature it did not write.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import { sendJson } from '../http/jsonHttp.js';
import { sseEvent } from '../http/sseEvent.js';
import { seal, unseal } from './reasoningSeal.js';
import { pieces, writeFrames, type Completion, type SseFrames } from './sseStream.js';
import type { ErrorKind, ReadRequest, Refusal, TestProtocol, TestUsage } from './testProtocol.js';
import type { ChatRequest, WireTool } from './wire.js';

type Block = Record<string, unknown> & { type?: unknown };
type Message = { role?: unknown; content?: unknown };
/** A converted message with the breakpoint its blocks carried. */
type Marked = ChatMessage & { cache_control?: unknown };

const ERRORS: Record<ErrorKind, { status: number; type: string; message: string }> = {
  auth: { status: 401, type: 'authentication_error', message: 'invalid x-api-key' },
  invalid: { status: 400, type: 'invalid_request_error', message: 'Invalid request.' },
  too_large: { status: 413, type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' },
  not_found: { status: 404, type: 'not_found_error', message: 'Not found.' },
  rate_limit: { status: 429, type: 'rate_limit_error', message: 'Number of requests has exceeded your per-minute rate limit.' },
  server: { status: 500, type: 'api_error', message: 'Internal server error' },
  overflow: { status: 400, type: 'invalid_request_error', message: 'prompt is too long' },
};

export const messagesProtocol: TestProtocol = {
  name: 'messages',
  path: '/v1/messages',
  authorized: (headers: IncomingHttpHeaders, apiKey: string) =>
    headers['x-api-key'] === apiKey || headers.authorization === `Bearer ${apiKey}`,
  read: readMessages,
  error(res: ServerResponse, status: number, kind: ErrorKind, message?: string) {
    // Anthropic's 529 is its own kind of server error.
    const type = status === 529 ? 'overloaded_error' : ERRORS[kind].type;
    sendJson(res, status, {
      type: 'error',
      error: { type, message: message ?? (status === 529 ? 'Overloaded' : ERRORS[kind].message) },
      request_id: `req_${randomBytes(12).toString('hex')}`,
    });
  },
  usage: (usage) => messagesUsage(usage),
  overflow: (promptTokens, window) => `prompt is too long: ${promptTokens} tokens > ${window} maximum`,
  async answer(res, completion, read, raw, faults, options) {
    const body = raw as Record<string, unknown>;
    const message = messageOf(completion, body, options.model, options.usage, read);
    if (!read.stream) return sendJson(res, 200, message);
    await writeFrames(res, framesOf(message, options.chunkChars), faults, options.chunkDelayMs);
  },
};

const thinkingOn = (body: Record<string, unknown>): boolean => {
  const type = (body.thinking as { type?: unknown } | undefined)?.type;
  return type === 'enabled' || type === 'adaptive';
};

function readMessages(body: unknown): ReadRequest | Refusal {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return { problem: 'the request body must be a JSON object' };
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || !b.model) return { problem: 'model: Field required', param: 'model' };
  if (typeof b.max_tokens !== 'number' || !Number.isInteger(b.max_tokens) || b.max_tokens < 1)
    return { problem: 'max_tokens: Field required', param: 'max_tokens' };
  if (!Array.isArray(b.messages) || !b.messages.length) return { problem: 'messages: at least one message is required', param: 'messages' };
  const out: Marked[] = [];
  if (typeof b.system === 'string' && b.system) out.push({ role: 'system', content: b.system });
  else if (Array.isArray(b.system))
    for (const [j, block] of (b.system as Block[]).entries()) {
      if (block?.type !== 'text' || typeof block.text !== 'string')
        return { problem: `system.${j}: a text block is expected`, param: 'system' };
      out.push({ role: 'system', content: block.text, ...(block.cache_control ? { cache_control: block.cache_control } : {}) });
    }
  const messages = b.messages as Message[];
  for (const [i, m] of messages.entries()) {
    const problem = readMessage(m, `messages.${i}`, out);
    if (problem) return { problem, param: 'messages' };
  }
  const problem = unpaired(messages) ?? (thinkingOn(b) ? unthought(messages) : null);
  if (problem) return { problem, param: 'messages' };
  const tools = toolsOf(b.tools);
  const cacheView: ChatRequest = { model: b.model, messages: out, ...(tools.length ? { tools } : {}) };
  // The model reads the system blocks as one system prompt; the cache, block by block (each may be a breakpoint).
  const system = out.filter((m, i) => m.role === 'system' && out.slice(0, i).every((o) => o.role === 'system'));
  const request: ChatRequest = {
    ...cacheView,
    messages: [
      ...(system.length ? [{ role: 'system' as const, content: system.map((m) => m.content).join('') }] : []),
      ...out.slice(system.length),
    ].map(({ cache_control: _mark, ...m }: Marked) => m as ChatMessage),
  };
  return { request, cacheView, stream: b.stream === true, maxTokens: b.max_tokens };
}

function readMessage(m: Message, where: string, out: Marked[]): string | null {
  if (m?.role !== 'user' && m?.role !== 'assistant' && m?.role !== 'system')
    return `${where}.role: unknown role ${JSON.stringify(m?.role)}`;
  if (typeof m.content === 'string') {
    out.push({ role: m.role, content: m.content } as ChatMessage);
    return null;
  }
  if (!Array.isArray(m.content)) return `${where}.content: a string or a list of blocks is expected`;
  const texts: string[] = [];
  const calls: ToolCall[] = [];
  let mark: unknown;
  for (const [j, block] of (m.content as Block[]).entries()) {
    const at = `${where}.content.${j}`;
    if (block?.cache_control) mark = block.cache_control;
    switch (block?.type) {
      case 'text':
        if (typeof block.text !== 'string') return `${at}.text: Field required`;
        texts.push(block.text);
        break;
      case 'tool_result': {
        if (m.role !== 'user') return `${at}: tool_result blocks belong in user messages`;
        const content = typeof block.content === 'string' ? block.content : textOf(block.content ?? []);
        if (typeof block.tool_use_id !== 'string' || content === null) return `${at}: a tool_result needs tool_use_id and text content`;
        out.push({
          role: 'tool',
          tool_call_id: block.tool_use_id,
          content,
          ...(block.cache_control ? { cache_control: block.cache_control } : {}),
        });
        break;
      }
      case 'tool_use':
        if (m.role !== 'assistant') return `${at}: tool_use blocks belong in assistant messages`;
        if (typeof block.id !== 'string' || typeof block.name !== 'string' || !block.input || typeof block.input !== 'object')
          return `${at}: a tool_use needs id, name and an input object`;
        calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
        break;
      case 'thinking':
        if (unseal(block.signature) === null) return `${at}: Invalid \`signature\` in \`thinking\` block`;
        break;
      case 'redacted_thinking':
        if (unseal(block.data) === null) return `${at}: Invalid \`data\` in \`redacted_thinking\` block`;
        break;
      default:
        return `${at}.type: the test server reads text, tool_use, tool_result and thinking blocks, not ${JSON.stringify(block?.type)}`;
    }
  }
  const marked = mark ? { cache_control: mark } : {};
  if (m.role === 'assistant')
    out.push({
      role: 'assistant',
      content: texts.length ? texts.join('') : null,
      ...(calls.length ? { tool_calls: calls } : {}),
      ...marked,
    });
  else if (texts.length) out.push({ role: m.role, content: texts.join('\n'), ...marked } as Marked);
  else if (mark && out.at(-1)?.role === 'tool') Object.assign(out.at(-1)!, marked);
  return null;
}

function textOf(content: unknown): string | null {
  if (!Array.isArray(content)) return null;
  const texts: string[] = [];
  for (const block of content as Block[]) {
    if (block?.type !== 'text' || typeof block.text !== 'string') return null;
    texts.push(block.text);
  }
  return texts.join('\n');
}

const blocksOf = (m: Message | undefined): Block[] => (Array.isArray(m?.content) ? (m.content as Block[]) : []);

/** Anthropic's refusal of tool calls and results that do not pair, message by message. */
function unpaired(messages: Message[]): string | null {
  let open: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.role === 'system') continue;
    const results = blocksOf(m)
      .filter((b) => b.type === 'tool_result')
      .map((b) => String(b.tool_use_id));
    const stray = results.find((id) => !open.includes(id));
    if (stray !== undefined)
      return `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${stray}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    const missing = open.filter((id) => !results.includes(id));
    if (missing.length)
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    open =
      m.role === 'assistant'
        ? blocksOf(m)
            .filter((b) => b.type === 'tool_use')
            .map((b) => String(b.id))
        : [];
  }
  return null;
}

/** With thinking on, the assistant message whose tool calls the request answers must open with its thinking. */
function unthought(messages: Message[]): string | null {
  const last = messages.findLastIndex((m) => m.role === 'assistant');
  if (last < 0 || !blocksOf(messages[last]).some((b) => b.type === 'tool_use')) return null;
  // Only the tool loop in progress: the assistant's calls answered, and nothing said since.
  if (messages.slice(last + 1).some((m) => m.role === 'user' && !blocksOf(m).every((b) => b.type === 'tool_result'))) return null;
  const first = blocksOf(messages[last])[0];
  if (first?.type === 'thinking' || first?.type === 'redacted_thinking') return null;
  return `messages.${last}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
}

function toolsOf(raw: unknown): WireTool[] {
  if (!Array.isArray(raw)) return [];
  return (raw as Block[]).flatMap((t): WireTool[] =>
    typeof t?.name === 'string'
      ? [
          {
            type: 'function',
            function: {
              name: t.name,
              ...(typeof t.description === 'string' ? { description: t.description } : {}),
              ...(t.input_schema && typeof t.input_schema === 'object' ? { parameters: t.input_schema as Record<string, unknown> } : {}),
            },
          },
        ]
      : [],
  );
}

const STOP: Record<string, string> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens', content_filter: 'refusal' };

/** The message: a thinking block when thinking is on, the text, the tool calls; the stop reason; the usage. */
function messageOf(completion: Completion, body: Record<string, unknown>, model: string, usage: TestUsage | null, read: ReadRequest) {
  const content: Block[] = [];
  if (thinkingOn(body)) {
    const user = read.request.messages.findLast((m) => m.role === 'user')?.content ?? '';
    const thought = `Thinking about: ${user.slice(0, 80)}`;
    const omitted = (body.thinking as { display?: unknown }).display === 'omitted';
    content.push({ type: 'thinking', thinking: omitted ? '' : thought, signature: seal(thought) });
  }
  if (completion.content) content.push({ type: 'text', text: completion.content });
  for (const call of completion.toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: inputOf(call.arguments) });
  return {
    id: `msg_${randomBytes(12).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: typeof body.model === 'string' ? body.model : model,
    content,
    stop_reason: STOP[completion.finishReason] ?? completion.finishReason,
    stop_sequence: null,
    ...(usage
      ? {
          usage: messagesUsage(usage),
        }
      : {}),
  };
}

/** A call's input object; a server whose arguments are cut (a fault) sends the text it has. */
function inputOf(args: string): unknown {
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}

/** The message's SSE events, in the order Anthropic sends them. */
function framesOf(message: ReturnType<typeof messageOf>, size: number): SseFrames {
  const { content, usage, stop_reason } = message;
  const frames = [
    sseEvent({
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, ...(usage ? { usage: { ...usage, output_tokens: 1 } } : {}) },
    }),
    sseEvent({ type: 'ping' }),
  ];
  let opening = frames.length;
  let textIndex = 0;
  content.forEach((block, index) => {
    const delta = (d: Record<string, unknown>) => sseEvent({ type: 'content_block_delta', index, delta: d });
    if (block.type === 'thinking') {
      frames.push(sseEvent({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
      for (const piece of pieces(block.thinking as string, size)) frames.push(delta({ type: 'thinking_delta', thinking: piece }));
      frames.push(delta({ type: 'signature_delta', signature: block.signature }));
    } else if (block.type === 'text') {
      frames.push(sseEvent({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
      opening = frames.length;
      textIndex = index;
      for (const piece of pieces(block.text as string, size)) frames.push(delta({ type: 'text_delta', text: piece }));
    } else {
      frames.push(sseEvent({ type: 'content_block_start', index, content_block: { ...block, input: {} } }));
      const json = typeof block.input === 'string' ? block.input : JSON.stringify(block.input);
      for (const piece of pieces(json, size)) frames.push(delta({ type: 'input_json_delta', partial_json: piece }));
    }
    frames.push(sseEvent({ type: 'content_block_stop', index }));
  });
  const finish = sseEvent({
    type: 'message_delta',
    delta: { stop_reason, stop_sequence: null },
    ...(usage ? { usage: { output_tokens: usage.output_tokens } } : {}),
  });
  frames.push(finish);
  const through = frames.length;
  frames.push(sseEvent({ type: 'message_stop' }));
  return {
    frames,
    done: '',
    opening,
    text: (text) => sseEvent({ type: 'content_block_delta', index: textIndex, delta: { type: 'text_delta', text } }),
    idle: sseEvent({ type: 'ping' }),
    thinking: sseEvent({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'thinking… ' } }),
    finish: { frame: finish, through },
  };
}

/** Anthropic's usage: input_tokens is what the prompt cache neither read nor wrote. */
function messagesUsage(usage: TestUsage) {
  return {
    input_tokens: usage.promptTokens - (usage.cachedTokens ?? 0) - usage.writtenTokens,
    cache_creation_input_tokens: usage.writtenTokens,
    cache_read_input_tokens: usage.cachedTokens ?? 0,
    output_tokens: usage.completionTokens,
  };
}
