/**
 * The test server's Responses API (POST /v1/responses), stateless as a client with
 * `store: false` uses it: `instructions` and the `input` items (messages, function and custom
 * tool calls and their outputs, reasoning items) are read as the Chat Completions body the
 * policy reads; the answer is one `response` object, or its SSE events in order
 * (response.created, response.in_progress, each output item added, its deltas, done,
 * response.completed), each with its sequence_number. With `include:
 * ["reasoning.encrypted_content"]` the answer opens with a reasoning item whose
 * encrypted_content is sealed (reasoningSeal.ts); one sent back altered is refused, as
 * OpenAI refuses it. Nothing is stored: a `previous_response_id` is not found.
 */
import { randomBytes } from 'node:crypto';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import { sendJson } from '../http/jsonHttp.js';
import { sseEvent } from '../http/sseEvent.js';
import { sendOpenaiError } from './chatProtocol.js';
import { seal, unseal } from './reasoningSeal.js';
import { unpairedTools } from './requestChecks.js';
import { pieces, writeFrames, type Completion, type SseFrames } from './sseStream.js';
import type { ReadRequest, Refusal, TestProtocol, TestUsage } from './testProtocol.js';
import type { ChatRequest, WireTool } from './wire.js';

type Item = Record<string, unknown> & { type?: unknown; role?: unknown };

export const responsesProtocol: TestProtocol = {
  name: 'responses',
  path: '/v1/responses',
  authorized: (headers, apiKey) => headers.authorization === `Bearer ${apiKey}`,
  read: readResponses,
  error: (res, status, kind, message, param) =>
    sendOpenaiError(res, status, kind, message, param ?? (kind === 'overflow' ? 'input' : null)),
  usage: (usage) => responsesUsage(usage),
  overflow: () => 'Your input exceeds the context window of this model. Please adjust your input and try again.',
  async answer(res, completion, read, raw, faults, options) {
    const body = raw as Record<string, unknown>;
    const response = responseOf(completion, body, options.model, options.usage, read);
    if (!read.stream) return sendJson(res, 200, response);
    await writeFrames(res, framesOf(response, options.chunkChars), faults, options.chunkDelayMs);
  },
};

function readResponses(body: unknown, strict: boolean): ReadRequest | Refusal {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return { problem: 'the request body must be a JSON object' };
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || !b.model) return { problem: "Missing required parameter: 'model'.", param: 'model' };
  if (typeof b.previous_response_id === 'string')
    return { problem: `Previous response with id '${b.previous_response_id}' not found.`, param: 'previous_response_id' };
  if (b.conversation !== undefined && b.conversation !== null)
    return { problem: 'Conversations are not stored by the test server.', param: 'conversation' };
  const messages: ChatMessage[] = [];
  if (typeof b.instructions === 'string' && b.instructions) messages.push({ role: 'system', content: b.instructions });
  if (typeof b.input === 'string') messages.push({ role: 'user', content: b.input });
  else if (Array.isArray(b.input)) {
    for (const [i, raw] of (b.input as Item[]).entries()) {
      const problem = readItem(raw, `input[${i}]`, messages);
      if (problem) return { problem, param: `input[${i}]` };
    }
  } else return { problem: "Missing required parameter: 'input'.", param: 'input' };
  if (!messages.length) return { problem: "Invalid 'input': empty array.", param: 'input' };
  const paired = strict ? unpairedTools(messages) : null;
  if (paired) return { problem: paired, param: 'input' };
  const tools = toolsOf(b.tools);
  const request: ChatRequest = { model: b.model, messages, ...(tools.length ? { tools } : {}) };
  return {
    request,
    stream: b.stream === true,
    maxTokens: typeof b.max_output_tokens === 'number' ? b.max_output_tokens : 0,
    ...(typeof b.prompt_cache_key === 'string' ? { cacheKey: b.prompt_cache_key } : {}),
  };
}

/** One input item into `messages`; why it is refused, or null. */
function readItem(item: Item, where: string, messages: ChatMessage[]): string | null {
  if (!item || typeof item !== 'object') return `${where} must be an object`;
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  const last = messages.at(-1);
  switch (type) {
    case 'message': {
      const text = textOf(item.content);
      if (text === null) return `${where}.content: the test server reads text only`;
      if (item.role === 'system' || item.role === 'developer') messages.push({ role: 'system', content: text });
      else if (item.role === 'user') messages.push({ role: 'user', content: text });
      else if (item.role === 'assistant') {
        // Another message item of the same answer (no call between): one assistant message.
        if (last?.role === 'assistant' && !last.tool_calls) last.content = (last.content ?? '') + text;
        else messages.push({ role: 'assistant', content: text });
      } else return `${where}.role: unknown role ${JSON.stringify(item.role)}`;
      return null;
    }
    case 'function_call':
    case 'custom_tool_call': {
      const args = type === 'function_call' ? item.arguments : item.input;
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof args !== 'string')
        return `${where}: a ${type} needs call_id, name and ${type === 'function_call' ? 'arguments' : 'input'}`;
      const call: ToolCall = { id: item.call_id, type: 'function', function: { name: item.name, arguments: args } };
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      return null;
    }
    case 'function_call_output':
    case 'custom_tool_call_output': {
      const output = typeof item.output === 'string' ? item.output : textOf(item.output);
      if (typeof item.call_id !== 'string' || output === null) return `${where}: a ${type} needs call_id and a text output`;
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: output });
      return null;
    }
    case 'reasoning':
      if (item.encrypted_content !== undefined && unseal(item.encrypted_content) === null)
        return `The encrypted content for item ${String(item.id)} could not be verified.`;
      return null;
    default:
      return `${where}.type: ${JSON.stringify(type)} is not read by the test server`;
  }
}

/** The text of a content (a string, or text parts joined); null when a part is not text. */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts: string[] = [];
  for (const part of content as { type?: unknown; text?: unknown; refusal?: unknown }[]) {
    if ((part?.type === 'input_text' || part?.type === 'output_text' || part?.type === 'text') && typeof part.text === 'string')
      texts.push(part.text);
    else if (part?.type === 'refusal' && typeof part.refusal === 'string') texts.push(part.refusal);
    else return null;
  }
  return texts.join('\n');
}

/** Function and custom tools, as the policy reads tools (hosted tools have no calls it could make). */
function toolsOf(raw: unknown): WireTool[] {
  if (!Array.isArray(raw)) return [];
  return (raw as Item[]).flatMap((t): WireTool[] =>
    (t?.type === 'function' || t?.type === 'custom') && typeof t.name === 'string'
      ? [
          {
            type: 'function',
            function: {
              name: t.name,
              ...(typeof t.description === 'string' ? { description: t.description } : {}),
              ...(t.parameters && typeof t.parameters === 'object' ? { parameters: t.parameters as Record<string, unknown> } : {}),
            },
          },
        ]
      : [],
  );
}

const hex = () => randomBytes(12).toString('hex');

/** The response object: its output items in order, its status, its usage. */
function responseOf(completion: Completion, body: Record<string, unknown>, model: string, usage: TestUsage | null, read: ReadRequest) {
  const output: Record<string, unknown>[] = [];
  const include = Array.isArray(body.include) ? body.include : [];
  if (include.includes('reasoning.encrypted_content')) {
    const thought = `Thinking about: ${lastUserText(read.request).slice(0, 80)}`;
    const summary = (body.reasoning as { summary?: unknown } | undefined)?.summary;
    output.push({
      type: 'reasoning',
      id: `rs_${hex()}`,
      summary: summary ? [{ type: 'summary_text', text: thought }] : [],
      encrypted_content: seal(thought),
    });
  }
  if (completion.content || !completion.toolCalls.length)
    output.push({
      type: 'message',
      id: `msg_${hex()}`,
      status: 'completed',
      role: 'assistant',
      content: completion.content ? [{ type: 'output_text', text: completion.content, annotations: [], logprobs: [] }] : [],
    });
  const custom = new Set((Array.isArray(body.tools) ? (body.tools as Item[]) : []).filter((t) => t?.type === 'custom').map((t) => t.name));
  for (const call of completion.toolCalls)
    output.push(
      custom.has(call.name)
        ? { type: 'custom_tool_call', id: `ctc_${hex()}`, call_id: call.id, name: call.name, input: call.arguments, status: 'completed' }
        : { type: 'function_call', id: `fc_${hex()}`, call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' },
    );
  const finish = completion.finishReason;
  const complete = finish === 'stop' || finish === 'tool_calls';
  return {
    id: `resp_${hex()}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: complete ? 'completed' : 'incomplete',
    background: false,
    error: null,
    incomplete_details: complete ? null : { reason: finish === 'length' ? 'max_output_tokens' : finish },
    instructions: typeof body.instructions === 'string' ? body.instructions : null,
    max_output_tokens: read.maxTokens || null,
    model: typeof body.model === 'string' ? body.model : model,
    output,
    parallel_tool_calls: body.parallel_tool_calls !== false,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: body.store !== false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: 1,
    truncation: 'disabled',
    usage: usage && responsesUsage(usage),
    user: null,
    metadata: {},
  };
}

function lastUserText(request: ChatRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]!;
    if (m.role === 'user') return m.content;
  }
  return '';
}

/** The response's SSE events, in the order OpenAI sends them. */
function framesOf(response: ReturnType<typeof responseOf>, size: number): SseFrames {
  let sequence = 0;
  const frame = (data: Record<string, unknown> & { type: string }) => sseEvent({ ...data, sequence_number: sequence++ });
  const frames = [
    frame({ type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } }),
    frame({ type: 'response.in_progress', response: { ...response, status: 'in_progress', output: [], usage: null } }),
  ];
  let opening = frames.length;
  let textItem = { id: '', index: 0 };
  response.output.forEach((item, output_index) => {
    const item_id = item.id as string;
    if (item.type === 'message') {
      frames.push(frame({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } }));
      const text = ((item.content as { text: string }[])[0]?.text ?? '') as string;
      const part = { type: 'output_text', text: '', annotations: [] };
      frames.push(frame({ type: 'response.content_part.added', item_id, output_index, content_index: 0, part }));
      opening = frames.length;
      textItem = { id: item_id, index: output_index };
      for (const delta of pieces(text, size))
        frames.push(frame({ type: 'response.output_text.delta', item_id, output_index, content_index: 0, delta, logprobs: [] }));
      frames.push(frame({ type: 'response.output_text.done', item_id, output_index, content_index: 0, text, logprobs: [] }));
      frames.push(frame({ type: 'response.content_part.done', item_id, output_index, content_index: 0, part: { ...part, text } }));
    } else if (item.type === 'reasoning') {
      frames.push(frame({ type: 'response.output_item.added', output_index, item: { ...item, summary: [] } }));
      (item.summary as { text: string }[]).forEach(({ text }, summary_index) => {
        const part = { type: 'summary_text', text: '' };
        frames.push(frame({ type: 'response.reasoning_summary_part.added', item_id, output_index, summary_index, part }));
        for (const delta of pieces(text, size))
          frames.push(frame({ type: 'response.reasoning_summary_text.delta', item_id, output_index, summary_index, delta }));
        frames.push(frame({ type: 'response.reasoning_summary_text.done', item_id, output_index, summary_index, text }));
        frames.push(frame({ type: 'response.reasoning_summary_part.done', item_id, output_index, summary_index, part: { ...part, text } }));
      });
    } else {
      const custom = item.type === 'custom_tool_call';
      const args = (custom ? item.input : item.arguments) as string;
      const kind = custom ? 'custom_tool_call_input' : 'function_call_arguments';
      frames.push(
        frame({
          type: 'response.output_item.added',
          output_index,
          item: { ...item, [custom ? 'input' : 'arguments']: '', status: 'in_progress' },
        }),
      );
      for (const delta of pieces(args, size)) frames.push(frame({ type: `response.${kind}.delta`, item_id, output_index, delta }));
      frames.push(frame({ type: `response.${kind}.done`, item_id, output_index, [custom ? 'input' : 'arguments']: args }));
    }
    frames.push(frame({ type: 'response.output_item.done', output_index, item }));
  });
  const finish = frame({ type: response.status === 'completed' ? 'response.completed' : 'response.incomplete', response });
  frames.push(finish);
  return {
    frames,
    done: '',
    opening,
    text: (delta) =>
      frame({
        type: 'response.output_text.delta',
        item_id: textItem.id,
        output_index: textItem.index,
        content_index: 0,
        delta,
        logprobs: [],
      }),
    // The Responses API has no keep-alive event: an SSE comment, which every reader skips.
    idle: ': keep-alive\n\n',
    thinking: frame({
      type: 'response.reasoning_summary_text.delta',
      item_id: 'rs_thinking',
      output_index: 0,
      summary_index: 0,
      delta: 'thinking… ',
    }),
    finish: { frame: finish, through: frames.length },
  };
}

/** The Responses API's usage: its details always (reasoning half the output with usageDetails). */
function responsesUsage(usage: TestUsage): Record<string, unknown> {
  return {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.details ? Math.floor(usage.completionTokens / 2) : 0 },
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}
