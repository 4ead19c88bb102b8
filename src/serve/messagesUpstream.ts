/**
 * The Anthropic Messages upstream (POST {base}/messages). The prepared request in the
 * protocol's shape: workmem's system messages as `system` text blocks, each answer as an
 * assistant message (the thinking blocks that came with its calls first, its text, its
 * tool_use blocks), each run of results (and the user text after them) as one user message
 * of tool_result blocks; cache_control breakpoints where workmem's layout says its stable
 * parts end (after the system prompt, after the memory, on the history before the last
 * message: at most four, LLMRequest.cacheBreakpoints); the client's tools as it sent them;
 * its parameters and its anthropic-version and anthropic-beta headers; the key from the
 * proxy's ANTHROPIC_API_KEY (x-api-key), or the client's own with --forward-auth. Called
 * through the openai client's generic POST, which reads the SSE stream and the errors (an
 * Anthropic error body carries its type and message where an OpenAI one does), with its
 * timeouts and abort; its Bearer key is removed. The answer's events are read as the Chat
 * Completions chunks the exchange reads.
 */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { ChatMessage } from '../history/messages.js';
import { breakpointsOf } from '../llm/cacheBreakpoints.js';
import type { LLMRequest } from '../llm/llm.js';
import type { Watchdog, WatchdogState } from '../llm/streamWatchdog.js';
import { withBoundCallIds } from '../llm/toolCallIds.js';
import type { ModelUpstream } from './modelUpstream.js';
import { upstreamChunk } from './upstreamChunk.js';
import type { Block, MessagesRequest } from './messagesWire.js';
import type { Failure, Upstream } from './upstream.js';

/** The version sent when the client names none. */
export const ANTHROPIC_VERSION = '2023-06-01';

export class MessagesUpstream implements ModelUpstream<MessagesRequest> {
  constructor(
    private readonly base: Upstream,
    /** From the proxy's environment (ANTHROPIC_API_KEY); absent for a server that needs none. */
    private readonly apiKey: string | undefined,
  ) {}

  async stream(
    request: MessagesRequest,
    call: LLMRequest,
    auth: string | undefined,
    signal: AbortSignal,
  ): Promise<AsyncIterable<ChatCompletionChunk>> {
    return this.message(bodyOf(request, call), request, auth, signal);
  }

  /** The client's request as it sent it. */
  passThrough(request: MessagesRequest, _maxOutputTokens: number, auth: string | undefined, signal: AbortSignal) {
    return this.message(request.body, request, auth, signal);
  }

  private async message(
    body: Record<string, unknown>,
    request: MessagesRequest,
    auth: string | undefined,
    signal: AbortSignal,
  ): Promise<AsyncIterable<ChatCompletionChunk>> {
    const key = auth ?? this.apiKey;
    const headers: Record<string, string | null> = {
      'anthropic-version': ANTHROPIC_VERSION,
      ...request.headers,
      // The openai client's own key never goes to an Anthropic server.
      Authorization: key && /^Bearer\s/i.test(key) ? key : null,
      ...(key && !/^Bearer\s/i.test(key) ? { 'x-api-key': key } : {}),
    };
    const events = await this.base.client.post('/messages', {
      body: { ...body, stream: true },
      stream: true,
      signal,
      headers,
    });
    return chunksOf(events as unknown as AsyncIterable<Block & { type: string }>, request);
  }

  watchdog(signal: AbortSignal): Watchdog {
    return this.base.watchdog(signal);
  }

  failure(error: unknown, watchdog: WatchdogState | null = null): Failure {
    return this.base.failure(error, watchdog);
  }
}

type WireMessage = { role: 'user' | 'assistant'; content: Block[] };

/** The upstream request: the client's parameters, workmem's system, messages and tools, the output limit the session keeps to. */
export function bodyOf(request: MessagesRequest, call: LLMRequest): Record<string, unknown> {
  const messages = withBoundCallIds(call.messages);
  const marks = breakpointsOf(call.cacheBreakpoints ?? [], messages);
  const mark = { cache_control: { type: 'ephemeral', ...(request.cacheTtl ? { ttl: request.cacheTtl } : {}) } };
  const system: Block[] = [];
  const out: WireMessage[] = [];
  messages.forEach((message, index) => {
    const cuts = marks.get(index);
    if (message.role === 'system' && !out.length) {
      // The stable system prompt is cut where a breakpoint says, so it is cached on its own.
      let from = 0;
      for (const end of cuts ?? []) {
        if (end <= from || from >= message.content.length) continue;
        system.push({ type: 'text', text: message.content.slice(from, end), ...mark });
        from = end;
      }
      if (from < message.content.length) system.push({ type: 'text', text: message.content.slice(from) });
      return;
    }
    const blocks = blocksOf(message, request);
    if (!blocks.length) return;
    if (cuts) Object.assign(blocks.at(-1)!, mark);
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const last = out.at(-1);
    // One message of each turn: results and the user's text after them share one, as the API wants them.
    if (last?.role === role && !(role === 'user' && last.content.some((b) => b.type === 'text') && message.role === 'tool'))
      last.content.push(...blocks);
    else out.push({ role, content: blocks });
  });
  const tools = call.tools.map(
    (t) => request.wireTools.get(t.name) ?? { name: t.name, description: t.description, input_schema: t.parameters },
  );
  return {
    ...request.params,
    ...(system.length ? { system } : {}),
    messages: out,
    ...(tools.length ? { tools } : {}),
    max_tokens: Math.min(request.maxTokens.value, call.maxOutputTokens),
  };
}

function blocksOf(message: ChatMessage, request: MessagesRequest): Block[] {
  switch (message.role) {
    case 'system':
    case 'user':
      return message.content ? [{ type: 'text', text: message.content }] : [];
    case 'tool':
      return [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: message.content }];
    case 'assistant': {
      const calls = message.tool_calls ?? [];
      return [
        ...request.thinking.of(calls.map((c) => c.id)).map((b) => ({ ...b })),
        ...(message.content ? [{ type: 'text', text: message.content }] : []),
        ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name, input: inputOf(c.function.arguments) })),
      ];
    }
  }
}

/** A call's arguments as its input object; arguments that are not a JSON object go as the text they are. */
function inputOf(args: string): unknown {
  try {
    const parsed = JSON.parse(args) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { arguments: args };
  } catch {
    return { arguments: args };
  }
}

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content_filter',
};

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/**
 * The answer's events as Chat Completions chunks: text and thinking deltas, each tool_use as
 * it opens and its input as it comes, the finish with the usage (message_start's input counts,
 * message_delta's output). Thinking blocks are kept beside the answer's calls.
 */
async function* chunksOf(events: AsyncIterable<Block & { type: string }>, request: MessagesRequest): AsyncIterable<ChatCompletionChunk> {
  let head = { id: 'msg-workmem', model: request.model, created: Math.floor(Date.now() / 1000) };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: unknown) =>
    upstreamChunk(head, delta, finish, usage);
  const usage: AnthropicUsage = {};
  const blocks = new Map<number, { call?: number; input?: unknown; deltas?: boolean; thought?: Block }>();
  const calls: string[] = [];
  const thoughts: Block[] = [];
  let stop: { reason: string; sequence: string | null } = { reason: 'end_turn', sequence: null };
  for await (const event of events) {
    switch (event.type) {
      case 'message_start': {
        const m = event.message as { id?: unknown; model?: unknown; usage?: AnthropicUsage };
        head = { ...head, ...(typeof m?.id === 'string' ? { id: m.id } : {}), ...(typeof m?.model === 'string' ? { model: m.model } : {}) };
        Object.assign(usage, m?.usage ?? {});
        break;
      }
      case 'content_block_start': {
        const block = event.content_block as Block;
        const index = Number(event.index);
        if (block?.type === 'text' && typeof block.text === 'string' && block.text) yield chunk({ content: block.text });
        else if (block?.type === 'tool_use') {
          blocks.set(index, { call: calls.length, input: block.input });
          calls.push(String(block.id));
          yield chunk({
            tool_calls: [{ index: calls.length - 1, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }],
          });
        } else if (block?.type === 'thinking') {
          const thought: Block = { type: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' };
          blocks.set(index, { thought });
          thoughts.push(thought);
        } else if (block?.type === 'redacted_thinking') thoughts.push({ ...block });
        break;
      }
      case 'content_block_delta': {
        const delta = event.delta as Block;
        const at = blocks.get(Number(event.index));
        if (delta?.type === 'text_delta') yield chunk({ content: String(delta.text ?? '') });
        else if (delta?.type === 'input_json_delta' && at?.call !== undefined) {
          at.deltas = true;
          yield chunk({ tool_calls: [{ index: at.call, function: { arguments: String(delta.partial_json ?? '') } }] });
        } else if (delta?.type === 'thinking_delta' && at?.thought) {
          at.thought.thinking = `${String(at.thought.thinking)}${String(delta.thinking ?? '')}`;
          yield chunk({ reasoning_content: String(delta.thinking ?? '') });
        } else if (delta?.type === 'signature_delta' && at?.thought) at.thought.signature = delta.signature;
        break;
      }
      case 'content_block_stop': {
        // A server that gives a call's whole input at its start, with no deltas.
        const at = blocks.get(Number(event.index));
        if (at?.call !== undefined && !at.deltas && at.input && typeof at.input === 'object' && Object.keys(at.input).length)
          yield chunk({ tool_calls: [{ index: at.call, function: { arguments: JSON.stringify(at.input) } }] });
        break;
      }
      case 'message_delta': {
        const delta = event.delta as { stop_reason?: unknown; stop_sequence?: unknown };
        if (typeof delta?.stop_reason === 'string')
          stop = { reason: delta.stop_reason, sequence: typeof delta.stop_sequence === 'string' ? delta.stop_sequence : null };
        Object.assign(usage, event.usage ?? {});
        break;
      }
      case 'message_stop': {
        request.thinking.keep(calls, thoughts);
        request.stopped = stop;
        yield chunk({}, FINISH[stop.reason] ?? stop.reason, usageOf(usage));
        return;
      }
    }
  }
}

/** Anthropic's usage in the Chat Completions words the exchange reads: its input_tokens leave out what the cache read and wrote. */
function usageOf(usage: AnthropicUsage): Record<string, unknown> | undefined {
  if (typeof usage.input_tokens !== 'number' || typeof usage.output_tokens !== 'number') return undefined;
  const read = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  const prompt = usage.input_tokens + read + written;
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.output_tokens,
    total_tokens: prompt + usage.output_tokens,
    prompt_tokens_details: { cached_tokens: read, cache_write_tokens: written },
  };
}
