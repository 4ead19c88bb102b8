/**
 * The Responses API upstream (POST {base}/responses), called with the official client: the
 * prepared request as input items — workmem's system messages as system items, each answer
 * as its message, its reasoning items (kept beside its calls) and its function or custom tool
 * calls, each result as its call's output — the client's tools as it sent them, its
 * parameters; streamed, the answer's events read as the Chat Completions chunks the exchange
 * reads. An error event, or a response that failed, is an error as the client would have
 * thrown it: an overflow is compacted and asked again.
 */
import { APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { ChatMessage } from '../history/messages.js';
import type { LLMRequest } from '../llm/llm.js';
import type { Watchdog, WatchdogState } from '../llm/streamWatchdog.js';
import { withBoundCallIds } from '../llm/toolCallIds.js';
import type { ModelUpstream } from './modelUpstream.js';
import { upstreamChunk } from './upstreamChunk.js';
import { qualifiedName, type ResponsesRequest, type WireItem } from './responsesWire.js';
import type { Failure, Upstream } from './upstream.js';

export class ResponsesUpstream implements ModelUpstream<ResponsesRequest> {
  constructor(private readonly base: Upstream) {}

  async stream(
    request: ResponsesRequest,
    call: LLMRequest,
    auth: string | undefined,
    signal: AbortSignal,
  ): Promise<AsyncIterable<ChatCompletionChunk>> {
    return this.response(bodyOf(request, call), request, auth, signal);
  }

  /** The client's request as it sent it. */
  passThrough(request: ResponsesRequest, _maxOutputTokens: number, auth: string | undefined, signal: AbortSignal) {
    return this.response(request.body, request, auth, signal);
  }

  private async response(
    body: Record<string, unknown>,
    request: ResponsesRequest,
    auth: string | undefined,
    signal: AbortSignal,
  ): Promise<AsyncIterable<ChatCompletionChunk>> {
    const events = await this.base.client.responses.create({ ...body, stream: true } as never, {
      signal,
      ...(auth ? { headers: { Authorization: auth } } : {}),
    });
    return chunksOf(events as unknown as AsyncIterable<WireItem & { type: string }>, request);
  }

  watchdog(signal: AbortSignal): Watchdog {
    return this.base.watchdog(signal);
  }

  failure(error: unknown, watchdog: WatchdogState | null = null): Failure {
    return this.base.failure(error, watchdog);
  }
}

/** The upstream request: the client's parameters, workmem's input items and tools, the output limit the session keeps to. */
export function bodyOf(request: ResponsesRequest, call: LLMRequest): Record<string, unknown> {
  const messages = withBoundCallIds(call.messages);
  const custom = (name: string) => request.customTools.has(name);
  const kindOf = callKinds(messages, custom);
  const input: WireItem[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'user':
        input.push({ type: 'message', role: m.role, content: m.content });
        break;
      case 'assistant': {
        const calls = m.tool_calls ?? [];
        input.push(...request.reasoning.of(calls.map((c) => c.id)));
        if (m.content) input.push({ type: 'message', role: 'assistant', content: m.content });
        for (const c of calls) {
          const [name, namespace] = splitName(c.function.name);
          input.push(
            custom(c.function.name)
              ? { type: 'custom_tool_call', call_id: c.id, name, input: c.function.arguments, ...namespace }
              : { type: 'function_call', call_id: c.id, name, arguments: c.function.arguments, ...namespace },
          );
        }
        break;
      }
      case 'tool':
        input.push({
          type: kindOf(m.tool_call_id) ? 'custom_tool_call_output' : 'function_call_output',
          call_id: m.tool_call_id,
          output: m.content,
        });
    }
  }
  const tools = [
    ...call.tools.map(
      (t) =>
        request.wireTools.get(t.name) ?? {
          type: 'function',
          name: t.name,
          description: t.description,
          parameters: t.parameters,
          strict: false,
        },
    ),
    ...request.otherTools,
  ];
  return {
    ...request.params,
    input,
    ...(tools.length ? { tools } : {}),
    ...(request.maxTokens ? { max_output_tokens: Math.min(request.maxTokens.value, call.maxOutputTokens) } : {}),
  };
}

/** Whether the call a result answers is a custom tool's, found among the calls before it. */
function callKinds(messages: readonly ChatMessage[], custom: (name: string) => boolean): (id: string) => boolean {
  const kinds = new Map<string, boolean>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.tool_calls ?? []) kinds.set(c.id, custom(c.function.name));
  return (id) => kinds.get(id) ?? false;
}

/** `namespace.name` as the wire names it. */
function splitName(qualified: string): [string, { namespace?: string }] {
  const dot = qualified.indexOf('.');
  return dot < 0 ? [qualified, {}] : [qualified.slice(dot + 1), { namespace: qualified.slice(0, dot) }];
}

/**
 * The answer's events as Chat Completions chunks: text and reasoning deltas, each call as it
 * opens and its arguments as they come, the finish with the usage. The first chunk waits for
 * the first output (response.created alone is no answer yet: a response that fails at once,
 * an overflow, can still be asked again before the client sees anything).
 */
async function* chunksOf(
  events: AsyncIterable<WireItem & { type: string }>,
  request: ResponsesRequest,
): AsyncIterable<ChatCompletionChunk> {
  let head = { id: 'resp-workmem', model: '', created: Math.floor(Date.now() / 1000) };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: unknown) =>
    upstreamChunk(head, delta, finish, usage);
  const calls = new Map<string, { index: number; id: string }>();
  const reasoning: WireItem[] = [];
  const open = (item: WireItem) => {
    const key = String(item.id ?? item.call_id);
    if (calls.has(key)) return null;
    const index = calls.size;
    calls.set(key, { index, id: String(item.call_id) });
    const args = String((item.type === 'custom_tool_call' ? item.input : item.arguments) ?? '');
    return chunk({ tool_calls: [{ index, id: item.call_id, type: 'function', function: { name: qualifiedName(item), arguments: args } }] });
  };
  for await (const event of events) {
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress': {
        const r = event.response as { id?: unknown; model?: unknown; created_at?: unknown };
        head = {
          id: typeof r?.id === 'string' ? r.id : head.id,
          model: typeof r?.model === 'string' ? r.model : request.model,
          created: typeof r?.created_at === 'number' ? r.created_at : head.created,
        };
        break;
      }
      case 'response.output_text.delta':
        yield chunk({ content: String(event.delta ?? '') });
        break;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        yield chunk({ reasoning_content: String(event.delta ?? '') });
        break;
      case 'response.output_item.added':
      case 'response.output_item.done': {
        const item = event.item as WireItem;
        if (item?.type === 'function_call' || item?.type === 'custom_tool_call') {
          const opened = open(item);
          if (opened) yield opened;
        } else if (item?.type === 'reasoning' && event.type === 'response.output_item.done') reasoning.push(item);
        break;
      }
      case 'response.function_call_arguments.delta':
      case 'response.custom_tool_call_input.delta': {
        const at = calls.get(String(event.item_id));
        if (at) yield chunk({ tool_calls: [{ index: at.index, function: { arguments: String(event.delta ?? '') } }] });
        break;
      }
      case 'response.completed':
      case 'response.incomplete': {
        const r = event.response as { usage?: WireUsage | null; incomplete_details?: { reason?: unknown } | null };
        request.reasoning.keep(
          [...calls.values()].map((c) => c.id),
          reasoning,
        );
        const reason = r?.incomplete_details?.reason;
        const finish =
          event.type === 'response.completed'
            ? calls.size
              ? 'tool_calls'
              : 'stop'
            : reason === 'content_filter'
              ? 'content_filter'
              : 'length';
        yield chunk({}, finish, usageOf(r?.usage));
        return;
      }
      case 'response.failed': {
        const error = (event.response as { error?: WireItem | null })?.error ?? { message: 'the response failed' };
        throw new APIError(undefined, { type: 'response_failed', ...error }, undefined, undefined);
      }
      case 'error':
        throw new APIError(
          undefined,
          { type: 'error', message: event.message, code: event.code ?? null, param: event.param ?? null },
          undefined,
          undefined,
        );
    }
  }
}

interface WireUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
}

/** The Responses API's usage in the Chat Completions words the exchange reads. */
function usageOf(usage: WireUsage | null | undefined): Record<string, unknown> | undefined {
  if (!usage) return undefined;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0),
    ...(usage.input_tokens_details ? { prompt_tokens_details: { cached_tokens: usage.input_tokens_details.cached_tokens } } : {}),
  };
}
