/**
 * The answer as the client reads it: one chat.completion, or a stream of chat.completion.chunk
 * events as OpenAI frames them (the role first, text as it comes with its logprobs, the
 * client's tool calls, the finish, the usage when asked for, [DONE]). One id, model and
 * system fingerprint for the whole exchange, however many upstream calls it took.
 */
import type { ServerResponse } from 'node:http';
import type { Answer, AnswerHead, ChunkExtras, ExchangeSink } from './exchange.js';
import type { Failure } from './upstream.js';

export function completionOf(answer: Answer): Record<string, unknown> {
  return {
    id: answer.id,
    object: 'chat.completion',
    created: answer.created,
    model: answer.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.content,
          refusal: answer.refusal,
          ...(answer.toolCalls.length ? { tool_calls: answer.toolCalls } : {}),
        },
        logprobs: answer.logprobs,
        finish_reason: answer.finishReason,
      },
    ],
    ...(answer.usage ? { usage: answer.usage } : {}),
    ...framing(answer),
  };
}

/** What the upstream said of itself, as it said it. */
function framing(head: AnswerHead): Record<string, unknown> {
  return {
    ...(head.system_fingerprint !== undefined ? { system_fingerprint: head.system_fingerprint } : {}),
    ...(head.service_tier !== undefined ? { service_tier: head.service_tier } : {}),
  };
}

export class ClientStream implements ExchangeSink {
  private first: AnswerHead | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string>,
  ) {}

  begin(first: AnswerHead): void {
    this.first = first;
    this.res.writeHead(200, {
      ...this.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    this.chunk({ role: 'assistant', content: '' });
  }

  delta(delta: { content?: string; reasoning_content?: string; refusal?: string }, extras?: ChunkExtras): void {
    this.chunk(delta, null, extras?.logprobs ?? null);
  }

  /** The client's calls, the finish and (when asked for) the usage; [DONE] comes with end(). */
  finish(answer: Answer, withUsage: boolean): void {
    if (!this.first) this.begin(answer);
    answer.toolCalls.forEach((call, index) => this.chunk({ tool_calls: [{ index, ...call }] }));
    this.chunk({}, answer.finishReason);
    if (withUsage) this.write({ ...this.frame(), choices: [], usage: answer.usage });
  }

  /** A failure once the stream has begun: an error event, as OpenAI sends one mid-stream. */
  fail(failure: Failure): void {
    this.write({ error: failure.body.error });
  }

  get begun(): boolean {
    return this.first !== null;
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end('data: [DONE]\n\n');
  }

  private frame(): Record<string, unknown> {
    const first = this.first!;
    return { id: first.id, object: 'chat.completion.chunk', created: first.created, model: first.model, ...framing(first) };
  }

  private chunk(delta: Record<string, unknown>, finishReason: string | null = null, logprobs: unknown = null): void {
    this.write({ ...this.frame(), choices: [{ index: 0, delta, logprobs, finish_reason: finishReason }] });
  }

  private write(event: unknown): void {
    if (!this.res.writableEnded) this.res.write(`data: ${JSON.stringify(event)}\n\n`);
  }
}
