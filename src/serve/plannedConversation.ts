/**
 * A client's conversation as a wire other than Chat Completions reads it: the wire's items or
 * blocks make workmem's messages in another grouping (a Responses answer is a message item
 * and its call items; an Anthropic user message holds tool results and text), so each
 * message is planned when the request is read — its shape at once, from the wire — and made
 * only when the session reads it. Messages workmem added in this exchange (its tools' calls
 * and results) follow the client's.
 */
import { shapeOf } from '../history/hostLine.js';
import { PLAIN_SHAPES, type ChatMessage, type MessageShape } from '../history/messages.js';
import type { ExchangeConversation } from './exchange.js';

/** One message of the client's conversation: what it is, and how to make it. */
export interface PlannedMessage {
  shape: MessageShape;
  make(): ChatMessage;
}

/** A shape from what a wire item says: a call's answer, an answer's calls, or neither. */
export function plannedShape(
  role: 'user' | 'assistant' | 'tool',
  of: { toolCallId?: string; calls?: { id: string; name: string }[] } = {},
): MessageShape {
  if (role === 'tool') return { role, toolCallId: of.toolCallId! };
  if (role === 'assistant' && of.calls?.length) return { role, calls: of.calls };
  return PLAIN_SHAPES[role];
}

export class PlannedConversation implements ExchangeConversation {
  readonly length: number;

  constructor(
    private readonly plan: readonly PlannedMessage[],
    private readonly added: readonly ChatMessage[] = [],
  ) {
    this.length = plan.length + added.length;
  }

  at(index: number): ChatMessage {
    return index < this.plan.length ? this.plan[index]!.make() : this.added[index - this.plan.length]!;
  }

  shape(index: number): MessageShape {
    return index < this.plan.length ? this.plan[index]!.shape : shapeOf(this.added[index - this.plan.length]!);
  }

  with(messages: readonly ChatMessage[]): PlannedConversation {
    return new PlannedConversation(this.plan, [...this.added, ...messages]);
  }
}
