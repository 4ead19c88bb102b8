/**
 * One client request through the session (HostLoop): the session records what the client
 * sent and builds each upstream request (memory, history per phase, the tail, the 75 %
 * fallback); the proxy calls the upstream and reports the answer. When the answer calls
 * workmem's tools (memory, compact_history) the proxy runs them in the session and asks
 * again with the results appended — each upstream call is a model call of its own, prepared
 * again — so the client sees only its own calls and the text of every answer, in order. An
 * answer that calls both the client's tools and workmem's has workmem's run first, then the
 * client's passed through. An overflow is compacted and the call made again before the
 * client sees anything. A request without a session (a first request, a side request:
 * conversationIndex.ts) is one call of the client's own request, passed through.
 *
 * What the upstream says beside the answer reaches the client as it came: each chunk's
 * logprobs with its text, the system fingerprint, the usage summed over the calls.
 */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { AssistantMessage, ChatMessage, ToolCall } from '../history/messages.js';
import type { LLMResponse } from '../llm/llm.js';
import { outputLimitChars, outputOverrun } from '../llm/outputLimit.js';
import { Assembler } from '../llm/streamAssembler.js';
import { Watchdog } from '../llm/streamWatchdog.js';
import { withBoundCallIds } from '../llm/toolCallIds.js';
import type { HostLoop, PreparedCall } from '../session/hostLoop.js';
import { instructionMessages, wireToolsOf, type ClientRequest } from './chatWire.js';
import type { Failure, Upstream } from './upstream.js';
import { UsageTotals, type WireUsage } from './usageTotals.js';

/** Rounds of workmem's own tools in one exchange before the client is answered with what there is. */
export const MAX_ROUNDS = 16;
/** A request passed through that sets no output limit: the answer is cut past twice this (as a session's is past twice its own). */
const PASSED_OUTPUT_TOKENS = 32_768;

/** What a chunk's choice carries beside its text: passed on as it came. */
export interface ChunkExtras {
  logprobs?: unknown;
}

/** Where the client's answer goes as it comes (a stream, or nothing until the end). */
export interface ExchangeSink {
  /** The upstream's answer has begun: the response can start. */
  begin(first: AnswerHead): void;
  /** Text of an answer (a reasoning model's thinking, a refusal), in order, with the chunk's logprobs. */
  delta(delta: { content?: string; reasoning_content?: string; refusal?: string }, extras?: ChunkExtras): void;
}

/** What frames every chunk of the answer: the first upstream call's, as it said them. */
export interface AnswerHead {
  id: string;
  model: string;
  created: number;
  system_fingerprint?: string | null;
  service_tier?: string | null;
}

export interface Answer extends AnswerHead {
  content: string | null;
  refusal: string | null;
  /** The client's own calls, for it to run. */
  toolCalls: ToolCall[];
  finishReason: string;
  usage: WireUsage | null;
  /** Each call's logprobs, joined as one answer's (null when the upstream sent none). */
  logprobs: { content: unknown[] | null; refusal: unknown[] | null } | null;
  /** Upstream calls made. */
  calls: number;
}

export type ExchangeOutcome = { ok: true; answer: Answer } | { ok: false; failure: Failure; begun: boolean };

/** The answer as the client holds it afterwards: its text and its own calls. */
export function heldAnswer(answer: Answer): AssistantMessage {
  return { role: 'assistant', content: answer.content, ...(answer.toolCalls.length ? { tool_calls: answer.toolCalls } : {}) };
}

export async function runExchange(
  loop: HostLoop | null,
  request: ClientRequest,
  upstream: Upstream,
  auth: string | undefined,
  signal: AbortSignal,
  sink: ExchangeSink,
): Promise<ExchangeOutcome> {
  const answer = new AnswerBuilder(request, sink);
  if (!loop) {
    // Passed through: the client's own request, one call.
    const limit = request.maxTokens?.value ?? PASSED_OUTPUT_TOKENS;
    try {
      const response = await answer.call(upstream, request.body, limit, auth, signal, () => {});
      return { ok: true, answer: answer.done(response.message.tool_calls ?? [], response.finishReason) };
    } catch (error) {
      return { ok: false, failure: upstream.failure(error, answer.watchdog), begun: answer.begun };
    }
  }
  // The client's tools may have any name: workmem's own are named beside them (toolNaming.ts).
  const tools = request.tools;
  let conversation = request.conversation;
  for (let round = 1; ; round++) {
    let call = await loop.prepare({ instructions: request.instructions, conversation, tools, whole: true });
    let response: LLMResponse;
    for (;;) {
      const streamed = answer.begun;
      try {
        response = await answer.call(upstream, bodyOf(request, call), call.request.maxOutputTokens, auth, signal, (text) =>
          call.text(text),
        );
        break;
      } catch (error) {
        const failure = upstream.failure(error, answer.watchdog);
        // Once the client has part of an answer, it cannot be asked again: every retry the session offers is refused too.
        const sent = answer.begun && (streamed || answer.streamedThisCall);
        const next = sent ? null : await call.fail(failure.error);
        if (sent) for (let left: PreparedCall | null = call; left;) left = await left.fail(failure.error);
        if (!next) return { ok: false, failure, begun: answer.begun };
        call = next;
      }
    }
    // The streamed text leaves before the answer is recorded (its append waits for the disk).
    await new Promise((resolve) => setImmediate(resolve));
    await call.answer(response);
    const calls = response.message.role === 'assistant' ? (response.message.tool_calls ?? []) : [];
    const mine = calls.filter((c) => loop.isOwnTool(c.function.name));
    const theirs = calls.filter((c) => !loop.isOwnTool(c.function.name));
    if (!mine.length) return { ok: true, answer: answer.done(theirs, response.finishReason) };
    const results = await loop.runTools(mine);
    if (theirs.length) return { ok: true, answer: answer.done(theirs, 'tool_calls') };
    if (round >= MAX_ROUNDS) return { ok: true, answer: answer.done([], 'stop') };
    conversation = conversation.with([
      response.message,
      ...results.map((r): ChatMessage => ({ role: 'tool', tool_call_id: r.callId, content: r.content })),
    ]);
  }
}

/** The client's answer, made of every upstream call of the exchange as they stream. */
class AnswerBuilder {
  private head: AnswerHead | null = null;
  private content = '';
  private refusal = '';
  private readonly usage = new UsageTotals();
  private logprobs: { content: unknown[] | null; refusal: unknown[] | null } | null = null;
  /** The watchdog of the call under way (or last made): a failure is read with it. */
  watchdog: Watchdog | null = null;
  /** The call under way sent the client something. */
  streamedThisCall = false;

  constructor(
    private readonly request: ClientRequest,
    private readonly sink: ExchangeSink,
  ) {}

  get begun(): boolean {
    return this.head !== null;
  }

  /** One upstream call, streamed to the client as it comes; its answer. The stall watchdog re-arms on real output only. */
  async call(
    upstream: Upstream,
    body: Record<string, unknown>,
    maxOutputTokens: number,
    auth: string | undefined,
    signal: AbortSignal,
    onText: (text: string) => void,
  ): Promise<LLMResponse> {
    const assembled = new Assembler();
    const watchdog = (this.watchdog = upstream.watchdog(signal));
    this.streamedThisCall = false;
    let usage: unknown = null;
    try {
      watchdog.start();
      const chunks = await upstream.stream(body, auth, watchdog.signal);
      const limit = outputLimitChars(maxOutputTokens);
      for await (const chunk of chunks) {
        if (chunk.usage) usage = chunk.usage;
        const { text, progress } = assembled.add(chunk);
        if (progress) watchdog.progress();
        if (assembled.outputChars > limit) {
          watchdog.cut();
          throw outputOverrun(limit, maxOutputTokens);
        }
        this.relay(chunk, text);
        if (text) onText(text);
        if (assembled.ended) break;
      }
      if (!assembled.finished || watchdog.userAborted) watchdog.check();
      const response = assembled.finish();
      this.usage.add(usage);
      return response;
    } catch (error) {
      // Silence after the finish costs only the usage: the answer is whole.
      if (assembled.finished && watchdog.timedOut && !watchdog.userAborted) {
        this.usage.add(usage);
        return assembled.finish();
      }
      throw error;
    } finally {
      watchdog.stop();
    }
  }

  /** A chunk's text, thinking, refusal and logprobs to the client, framed by the first call's head. */
  private relay(chunk: ChatCompletionChunk, text: string): void {
    const framed = chunk as ChatCompletionChunk & { system_fingerprint?: string | null; service_tier?: string | null };
    if (!this.head) {
      this.head = {
        id: chunk.id,
        model: chunk.model,
        created: chunk.created,
        ...(framed.system_fingerprint !== undefined ? { system_fingerprint: framed.system_fingerprint } : {}),
        ...(framed.service_tier !== undefined ? { service_tier: framed.service_tier } : {}),
      };
      this.sink.begin(this.head);
    } else if (framed.system_fingerprint && !this.head.system_fingerprint) this.head.system_fingerprint = framed.system_fingerprint;
    const choice = chunk.choices?.[0];
    const delta = (choice?.delta ?? {}) as { reasoning_content?: unknown; refusal?: unknown };
    const thought = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : undefined;
    const refusal = typeof delta.refusal === 'string' && delta.refusal ? delta.refusal : undefined;
    const logprobs = choice?.logprobs ?? undefined;
    if (text) this.content += text;
    if (refusal) this.refusal += refusal;
    if (logprobs) this.addLogprobs(logprobs as { content?: unknown; refusal?: unknown });
    if (text || thought !== undefined || refusal || logprobs) {
      this.streamedThisCall = true;
      this.sink.delta(
        {
          ...(text ? { content: text } : {}),
          ...(thought !== undefined ? { reasoning_content: thought } : {}),
          ...(refusal ? { refusal } : {}),
        },
        logprobs ? { logprobs } : undefined,
      );
    }
  }

  private addLogprobs(given: { content?: unknown; refusal?: unknown }): void {
    const all = (this.logprobs ??= { content: null, refusal: null });
    if (Array.isArray(given.content)) all.content = [...(all.content ?? []), ...given.content];
    if (Array.isArray(given.refusal)) all.refusal = [...(all.refusal ?? []), ...given.refusal];
  }

  done(toolCalls: ToolCall[], finishReason: string): Answer {
    return {
      ...(this.head ?? { id: 'chatcmpl-workmem', model: this.request.model, created: Math.floor(Date.now() / 1000) }),
      content: this.content || null,
      refusal: this.refusal || null,
      toolCalls,
      finishReason,
      usage: this.usage.wire(),
      logprobs: this.logprobs,
      calls: this.usage.count,
    };
  }
}

/** The upstream request: the client's parameters, workmem's messages and tools, the output limit the session keeps to. */
function bodyOf(request: ClientRequest, call: PreparedCall): Record<string, unknown> {
  const { messages, tools, maxOutputTokens } = call.request;
  const [first, ...rest] = withBoundCallIds(messages);
  return {
    ...request.params,
    messages: first ? [...instructionMessages(request.instructionParts, request.instructions, first), ...rest] : [],
    ...(tools.length ? { tools: wireToolsOf(tools, request.wireTools) } : {}),
    ...(request.maxTokens ? { [request.maxTokens.name]: Math.min(request.maxTokens.value, maxOutputTokens) } : {}),
  };
}
