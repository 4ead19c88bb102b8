/**
 * One client request through the session (HostLoop): the session records what the client
 * sent and builds each upstream request (memory, history per phase, the tail, the 75 %
 * fallback); the proxy calls the upstream and reports the answer. When the answer calls
 * workmem's tools (memory, compact_history) the proxy runs them in the session and asks
 * again with the results appended — each upstream call is a model call of its own, prepared
 * again — so the client sees only its own calls and the text of every answer, in order. An
 * answer that calls both the client's tools and workmem's has workmem's run first, then the
 * client's passed through. An overflow is compacted and the call made again before the
 * client sees anything.
 */
import type { HostConversation } from '../../machines/sessionTypes.js';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { LLMResponse } from '../llm/llm.js';
import { outputLimitChars, outputOverrun } from '../llm/outputLimit.js';
import { Assembler } from '../llm/streamAssembler.js';
import type { HostLoop, PreparedCall } from '../session/hostLoop.js';
import type { ToolSpec } from '../tools/tool.js';
import { BadRequestError } from './chatWire.js';
import type { Failure, ModelUpstream } from './modelUpstream.js';
import { UsageTotals, type WireUsage } from './usageTotals.js';

/** Rounds of workmem's own tools in one exchange before the client is answered with what there is. */
export const MAX_ROUNDS = 16;

/** What the exchange reads of a client's request, whatever its wire. */
export interface ExchangeRequest {
  model: string;
  /** The client's system (and developer) messages, joined: none gives undefined. */
  instructions: string | undefined;
  conversation: ExchangeConversation;
  /** The client's tools that the session lists beside its own. */
  tools: ToolSpec[];
}

/** The client's conversation, read by index, and the messages of workmem's exchange after it. */
export interface ExchangeConversation extends HostConversation {
  with(messages: readonly ChatMessage[]): ExchangeConversation;
}

/** Where the client's answer goes as it comes (a stream, or nothing until the end). */
export interface ExchangeSink {
  /** The upstream's answer has begun: the response can start. */
  begin(first: { id: string; model: string; created: number }): void;
  /** Text of an answer (and a reasoning model's thinking), in order. */
  delta(delta: { content?: string; reasoning_content?: string }): void;
}

export interface Answer {
  id: string;
  model: string;
  created: number;
  content: string | null;
  /** The client's own calls, for it to run. */
  toolCalls: ToolCall[];
  finishReason: string;
  usage: WireUsage | null;
  /** Upstream calls made. */
  calls: number;
}

export type ExchangeOutcome = { ok: true; answer: Answer } | { ok: false; failure: Failure; begun: boolean };

export async function runExchange<R extends ExchangeRequest>(
  loop: HostLoop,
  request: R,
  upstream: ModelUpstream<R>,
  auth: string | undefined,
  signal: AbortSignal,
  sink: ExchangeSink,
): Promise<ExchangeOutcome> {
  const ours = new Set(loop.tools.map((t) => t.name));
  const clash = request.tools.filter((t) => ours.has(t.name)).map((t) => t.name);
  if (clash.length)
    throw new BadRequestError(
      `the client's tools ${clash.map((n) => JSON.stringify(n)).join(', ')} have the names of workmem's own tools (${[...ours].join(', ')}); rename them to go through workmem serve`,
      'tools',
      'tool_name_conflict',
    );
  const tools = [...loop.tools.map((t) => t.spec), ...request.tools];
  const usage = new UsageTotals();
  let conversation = request.conversation;
  let first: { id: string; model: string; created: number } | null = null;
  let content = '';
  for (let round = 1; ; round++) {
    let call = await loop.prepare({ instructions: request.instructions, conversation, tools, whole: true });
    let response: LLMResponse;
    for (;;) {
      const assembled = new Assembler();
      let streamed = false;
      try {
        const chunks = await upstream.stream(request, call.request, auth, signal);
        const limit = outputLimitChars(call.request.maxOutputTokens);
        for await (const chunk of chunks) {
          if (!first) sink.begin((first = { id: chunk.id, model: chunk.model, created: chunk.created }));
          streamed = true;
          const { text } = assembled.add(chunk);
          if (assembled.outputChars > limit) throw outputOverrun(limit, call.request.maxOutputTokens);
          const thought = (chunk.choices?.[0]?.delta as { reasoning_content?: unknown } | undefined)?.reasoning_content;
          if (text) {
            call.text(text);
            content += text;
          }
          if (text || typeof thought === 'string')
            sink.delta({ ...(text ? { content: text } : {}), ...(typeof thought === 'string' ? { reasoning_content: thought } : {}) });
          if (assembled.ended) break;
        }
        response = assembled.finish();
        break;
      } catch (error) {
        const failure = upstream.failure(error);
        // Once the client has part of an answer, it cannot be asked again: every retry the session offers is refused too.
        const next = streamed ? null : await call.fail(failure.error);
        if (streamed) for (let left: PreparedCall | null = call; left;) left = await left.fail(failure.error);
        if (!next) return { ok: false, failure, begun: first !== null };
        call = next;
      }
    }
    usage.add(response.usage);
    // The streamed text leaves before the answer is recorded (its append waits for the disk).
    await new Promise((resolve) => setImmediate(resolve));
    await call.answer(response);
    const calls = response.message.role === 'assistant' ? (response.message.tool_calls ?? []) : [];
    const mine = calls.filter((c) => ours.has(c.function.name));
    const theirs = calls.filter((c) => !ours.has(c.function.name));
    const done = (finishReason: string): ExchangeOutcome => ({
      ok: true,
      answer: {
        ...(first ?? { id: 'chatcmpl-workmem', model: request.model, created: Math.floor(Date.now() / 1000) }),
        content: content || null,
        toolCalls: theirs,
        finishReason,
        usage: usage.wire(),
        calls: usage.count,
      },
    });
    if (!mine.length) return done(response.finishReason);
    const results = await loop.runTools(mine);
    if (theirs.length) return done('tool_calls');
    if (round >= MAX_ROUNDS) return done('stop');
    conversation = conversation.with([
      response.message,
      ...results.map((r): ChatMessage => ({ role: 'tool', tool_call_id: r.callId, content: r.content })),
    ]);
  }
}
