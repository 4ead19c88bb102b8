/**
 * Reading a request as the stand-in models do: as text (content sent in parts, with
 * cache_control marks, joined), and where each message ends in tokens, for recall that
 * falls with a fact's distance from the end of the request (protocolFollower's `recall`).
 */
import type { ChatMessage } from '../history/messages.js';
import type { ChatRequest } from './wire.js';

/** How likely a fact in the request is recalled, by where it stands. */
export interface Recall {
  /** The probability (0–1) of recalling a fact with `after` tokens between it and the end of a request of `total` tokens. */
  probability(after: number, total: number): number;
  /** A text's tokens. */
  tokens(text: string): number;
}

/** The request as text: content sent in parts (with cache_control marks) joined, as a model reads it. */
export function asText(request: ChatRequest): ChatRequest {
  if (!request.messages.some((m) => Array.isArray(m.content))) return request;
  return {
    ...request,
    messages: request.messages.map((m) =>
      Array.isArray(m.content)
        ? ({
            ...m,
            content: (m.content as { text?: unknown }[]).map((p) => (typeof p?.text === 'string' ? p.text : '')).join(''),
          } as ChatMessage)
        : m,
    ),
  };
}

/** Where each message of a request ends, in tokens, for recall by distance. */
export class Positions {
  /** Tokens from the start of the request to the end of each message. */
  private readonly ends: number[] = [];
  readonly total: number;

  constructor(
    private readonly messages: readonly ChatMessage[],
    recall: Recall,
  ) {
    let at = 0;
    for (const m of messages) {
      const calls = m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.function.name + c.function.arguments).join('') : '';
      at += recall.tokens((m.content ?? '') + calls) + 4;
      this.ends.push(at);
    }
    this.total = at;
  }

  /** Tokens after character `offset` of message `index` (within a message, by its share of characters). */
  after(index: number, offset: number): number {
    const end = this.ends[index] ?? this.total;
    const start = index > 0 ? this.ends[index - 1]! : 0;
    const length = (this.messages[index]?.content ?? '').length || 1;
    return Math.max(0, Math.round(this.total - end + (end - start) * (1 - Math.min(1, offset / length))));
  }
}
