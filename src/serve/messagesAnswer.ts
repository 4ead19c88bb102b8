/**
 * The answer as an Anthropic Messages client reads it: one `message`, or its SSE events as
 * Anthropic sends them — message_start and a ping, the text block opened as its text comes
 * and its deltas, then the thinking blocks that came with the client's calls and each
 * tool_use block (start, input, stop), message_delta with the stop reason and the usage,
 * message_stop. One id and model for the whole exchange, however many upstream calls it took;
 * the usage is their sum, in message_delta (message_start, sent before any call has ended,
 * says 0). Errors are Anthropic's shape; a failure once the stream has begun is an `error` event.
 */
import type { ServerResponse } from 'node:http';
import { sseEvent, startSse } from '../http/sseEvent.js';
import type { ClientSink, WireError } from './clientWire.js';
import type { Answer } from './exchange.js';
import type { Block, MessagesRequest } from './messagesWire.js';
import type { Failure } from './modelUpstream.js';
import type { WireUsage } from './usageTotals.js';

export function messageOf(answer: Answer, request: MessagesRequest): Record<string, unknown> {
  const text = answer.content ? [{ type: 'text', text: answer.content }] : [];
  return {
    ...frameOf(answer, request),
    content: [
      ...thinkingOf(answer, request),
      ...text,
      ...answer.toolCalls.map((c) => ({ ...toolUse(c), input: inputOf(c.function.arguments) })),
    ],
    ...stopOf(answer, request),
    ...usageOf(answer.usage),
  };
}

function frameOf(head: { id: string; model: string }, request: MessagesRequest) {
  return { id: head.id, type: 'message', role: 'assistant', model: head.model || request.model };
}

/** The thinking blocks that came with the client's calls: it sends them back with those calls. */
function thinkingOf(answer: Answer, request: MessagesRequest): readonly Block[] {
  return request.thinking.of(answer.toolCalls.map((c) => c.id));
}

function toolUse(call: Answer['toolCalls'][number]) {
  return { type: 'tool_use', id: call.id, name: call.function.name };
}

function inputOf(args: string): unknown {
  try {
    const parsed = JSON.parse(args) as unknown;
    return parsed && typeof parsed === 'object' ? parsed : {};
  } catch {
    return {};
  }
}

/** The stop reason in the protocol's words: the upstream's own when the answer ended as its last call did. */
function stopOf(answer: Answer, request: MessagesRequest): { stop_reason: string; stop_sequence: string | null } {
  const said = request.stopped;
  switch (answer.finishReason) {
    case 'tool_calls':
      return { stop_reason: 'tool_use', stop_sequence: null };
    case 'stop':
      return said?.reason === 'stop_sequence' || said?.reason === 'pause_turn'
        ? { stop_reason: said.reason, stop_sequence: said.sequence }
        : { stop_reason: 'end_turn', stop_sequence: null };
    case 'length':
      return { stop_reason: said?.reason === 'model_context_window_exceeded' ? said.reason : 'max_tokens', stop_sequence: null };
    case 'content_filter':
      return { stop_reason: 'refusal', stop_sequence: null };
    default:
      return { stop_reason: answer.finishReason, stop_sequence: null };
  }
}

/** The summed usage in Anthropic's words (input_tokens leaves out what the cache read and wrote); none when one call reported none. */
function usageOf(usage: WireUsage | null): { usage?: Record<string, number> } {
  if (!usage) return {};
  const read = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    usage: {
      input_tokens: Math.max(0, usage.prompt_tokens - read - written),
      cache_creation_input_tokens: written,
      cache_read_input_tokens: read,
      output_tokens: usage.completion_tokens,
    },
  };
}

const ANTHROPIC_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
]);

/** An error in Anthropic's shape: the upstream's own type, else the one its status means. */
export function anthropicError(
  status: number,
  error: WireError,
): { type: 'error'; error: { type: string; message: string; details?: { error_code: string } } } {
  // OpenAI's names (and the proxy's own) say less than the status does; Anthropic's own say what they mean.
  const type =
    ANTHROPIC_TYPES.has(error.type) && error.type !== 'invalid_request_error'
      ? error.type
      : (BY_STATUS[status] ?? (status >= 500 || status === 409 ? 'api_error' : 'invalid_request_error'));
  return { type: 'error', error: { type, message: error.message, ...(error.code ? { details: { error_code: error.code } } : {}) } };
}

const BY_STATUS: Record<number, string> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export class MessagesStream implements ClientSink {
  private head: { id: string; model: string } | null = null;
  private blocks = 0;
  private textOpen = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string>,
    private readonly request: MessagesRequest,
  ) {}

  begin(first: { id: string; model: string; created: number }): void {
    this.head = first;
    startSse(this.res, this.headers);
    const usage = { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
    this.event({
      type: 'message_start',
      message: { ...frameOf(first, this.request), content: [], stop_reason: null, stop_sequence: null, usage },
    });
    this.event({ type: 'ping' });
  }

  delta(delta: { content?: string; reasoning_content?: string }): void {
    // Thinking is not streamed: its blocks come whole, beside the calls they came with.
    if (!delta.content) return;
    if (!this.textOpen) {
      this.textOpen = true;
      this.event({ type: 'content_block_start', index: this.blocks, content_block: { type: 'text', text: '' } });
    }
    this.event({ type: 'content_block_delta', index: this.blocks, delta: { type: 'text_delta', text: delta.content } });
  }

  finish(answer: Answer): void {
    if (!this.head) this.begin(answer);
    if (this.textOpen) this.stop();
    for (const thought of thinkingOf(answer, this.request)) {
      const index = this.blocks;
      if (thought.type === 'thinking') {
        this.event({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        if (thought.thinking)
          this.event({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: thought.thinking } });
        this.event({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: thought.signature } });
      } else this.event({ type: 'content_block_start', index, content_block: thought });
      this.stop();
    }
    for (const call of answer.toolCalls) {
      const index = this.blocks;
      this.event({ type: 'content_block_start', index, content_block: { ...toolUse(call), input: {} } });
      this.event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: call.function.arguments } });
      this.stop();
    }
    this.event({ type: 'message_delta', delta: stopOf(answer, this.request), ...usageOf(answer.usage) });
    this.event({ type: 'message_stop' });
  }

  fail(failure: Failure): void {
    this.event(anthropicError(failure.status, failure.body.error));
  }

  get begun(): boolean {
    return this.head !== null;
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  private stop(): void {
    this.event({ type: 'content_block_stop', index: this.blocks++ });
  }

  private event(data: { type: string } & Record<string, unknown>): void {
    if (!this.res.writableEnded) this.res.write(sseEvent(data));
  }
}
