/**
 * The answer as a Responses API client reads it: one `response` object, or its SSE events as
 * OpenAI sends them — response.created and response.in_progress, the message item opened as
 * its text comes and its text deltas, then the reasoning items that came with the client's
 * calls and the calls (each added, its arguments, done), response.completed with the output
 * and the usage — every event with its sequence_number. One id and model for the whole
 * exchange, however many upstream calls it took. A failure once the stream has begun is
 * response.failed.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sseEvent, startSse } from '../http/sseEvent.js';
import type { ClientSink } from './clientWire.js';
import type { Answer } from './exchange.js';
import type { ResponsesRequest, WireItem } from './responsesWire.js';
import type { Failure } from './modelUpstream.js';
import type { WireUsage } from './usageTotals.js';

const itemId = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

/** The response object, complete. */
export function responseOf(answer: Answer, request: ResponsesRequest, output = outputOf(answer, request)): Record<string, unknown> {
  return { ...frameOf(answer, request), ...statusOf(answer.finishReason), output, usage: usageOf(answer.usage) };
}

/** The answer's output items: the reasoning that came with the client's calls, its text, its calls. */
export function outputOf(
  answer: Answer,
  request: ResponsesRequest,
  message = answer.content ? messageItem(itemId('msg'), answer.content) : null,
): WireItem[] {
  return [...(message ? [message] : []), ...request.reasoning.of(answer.toolCalls.map((c) => c.id)), ...callItems(answer, request)];
}

function messageItem(id: string, text: string): WireItem {
  return {
    type: 'message',
    id,
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}

function callItems(answer: Answer, request: ResponsesRequest): WireItem[] {
  return answer.toolCalls.map((c) => {
    const qualified = c.function.name;
    const dot = qualified.indexOf('.');
    const named = dot < 0 ? { name: qualified } : { name: qualified.slice(dot + 1), namespace: qualified.slice(0, dot) };
    return request.customTools.has(qualified)
      ? { type: 'custom_tool_call', id: itemId('ctc'), call_id: c.id, ...named, input: c.function.arguments, status: 'completed' }
      : { type: 'function_call', id: itemId('fc'), call_id: c.id, ...named, arguments: c.function.arguments, status: 'completed' };
  });
}

/** What every response object says of the request, as OpenAI echoes it. */
function frameOf(head: { id: string; model: string; created: number }, request: ResponsesRequest): Record<string, unknown> {
  const p = request.params;
  return {
    id: head.id,
    object: 'response',
    created_at: head.created,
    model: head.model || request.model,
    error: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.maxTokens?.value ?? null,
    parallel_tool_calls: p.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: p.reasoning ?? null,
    store: p.store ?? true,
    temperature: p.temperature ?? null,
    text: p.text ?? { format: { type: 'text' } },
    tool_choice: p.tool_choice ?? 'auto',
    tools: request.clientTools,
    top_p: p.top_p ?? null,
    truncation: p.truncation ?? 'disabled',
    user: p.user ?? null,
    metadata: p.metadata ?? {},
  };
}

function statusOf(finishReason: string): { status: string; incomplete_details: { reason: string } | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** The summed usage in the Responses API's words; null when one upstream call reported none. */
function usageOf(usage: WireUsage | null): Record<string, unknown> | null {
  if (!usage) return null;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
}

export class ResponsesStream implements ClientSink {
  private head: { id: string; model: string; created: number } | null = null;
  private sequence = 0;
  private message: { id: string; text: string } | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string>,
    private readonly request: ResponsesRequest,
  ) {}

  begin(first: { id: string; model: string; created: number }): void {
    this.head = first;
    startSse(this.res, this.headers);
    const response = { ...frameOf(first, this.request), status: 'in_progress', incomplete_details: null, output: [], usage: null };
    this.event('response.created', { response });
    this.event('response.in_progress', { response });
  }

  delta(delta: { content?: string; reasoning_content?: string }): void {
    // Reasoning is not streamed: its items come whole, beside the calls they came with.
    if (!delta.content) return;
    if (!this.message) {
      this.message = { id: itemId('msg'), text: '' };
      this.event('response.output_item.added', {
        output_index: 0,
        item: { type: 'message', id: this.message.id, status: 'in_progress', role: 'assistant', content: [] },
      });
      this.event('response.content_part.added', { ...this.at(), part: { type: 'output_text', text: '', annotations: [] } });
    }
    this.message.text += delta.content;
    this.event('response.output_text.delta', { ...this.at(), delta: delta.content, logprobs: [] });
  }

  finish(answer: Answer): void {
    if (!this.head) this.begin(answer);
    let message: WireItem | null = null;
    if (this.message) {
      const { text } = this.message;
      this.event('response.output_text.done', { ...this.at(), text, logprobs: [] });
      this.event('response.content_part.done', { ...this.at(), part: { type: 'output_text', text, annotations: [] } });
      message = messageItem(this.message.id, text);
      this.event('response.output_item.done', { output_index: 0, item: message });
    }
    const output = outputOf(answer, this.request, message);
    output.forEach((item, output_index) => {
      if (item === message) return;
      const args = item.type === 'custom_tool_call' ? 'input' : item.type === 'function_call' ? 'arguments' : null;
      this.event('response.output_item.added', { output_index, item: args ? { ...item, [args]: '', status: 'in_progress' } : item });
      if (args) {
        const kind = args === 'input' ? 'custom_tool_call_input' : 'function_call_arguments';
        const at = { item_id: item.id, output_index };
        this.event(`response.${kind}.delta`, { ...at, delta: item[args] });
        this.event(`response.${kind}.done`, { ...at, [args]: item[args] });
      }
      this.event('response.output_item.done', { output_index, item });
    });
    const response = responseOf({ ...answer, ...this.head! }, this.request, output);
    this.event(response.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  fail(failure: Failure): void {
    const { message, code, type } = failure.body.error;
    const response = { ...frameOf(this.head!, this.request), status: 'failed', incomplete_details: null, output: [], usage: null };
    this.event('response.failed', { response: { ...response, error: { code: code ?? type, message } } });
  }

  get begun(): boolean {
    return this.head !== null;
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  private at(): { item_id: string; output_index: number; content_index: number } {
    return { item_id: this.message!.id, output_index: 0, content_index: 0 };
  }

  private event(type: string, data: Record<string, unknown>): void {
    if (!this.res.writableEnded) this.res.write(sseEvent({ type, ...data, sequence_number: this.sequence++ }));
  }
}
