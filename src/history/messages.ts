/**
 * Chat messages in the Chat Completions wire shape, so that what we store, what we
 * count and what we send are the same objects.
 */
import { z } from 'zod';
import type { ChatMessage, ToolCall } from '../events.js';

export const ToolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type { ToolCall };

export const ChatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string(), name: z.string().optional() }),
  z.object({ role: z.literal('user'), content: z.string(), name: z.string().optional() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(ToolCallSchema).optional(),
    name: z.string().optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: z.string() }),
]);
export type { ChatMessage };
// The schema and the vocabulary's types are one shape: each side must accept the other.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: Same<z.infer<typeof ChatMessageSchema>, ChatMessage> & Same<z.infer<typeof ToolCallSchema>, ToolCall> = true;
void sameShape;
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;
export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;
export type UserMessage = Extract<ChatMessage, { role: 'user' }>;

/** The same message with `suffix` appended to its text; never mutates the original. */
export function withSuffix<M extends ChatMessage>(message: M, suffix: string): M {
  return { ...message, content: (message.content ?? '') + suffix };
}

/** What a message is, without its text: its role, the tool call it answers, the calls it makes. */
export interface MessageShape {
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** A tool message: the id of the call it answers. */
  toolCallId?: string;
  /** An assistant message: its calls' ids and names. */
  calls?: readonly { id: string; name: string }[];
}

/** The shapes of messages that answer and make no call, one object each: a long conversation is folded on every call. */
export const PLAIN_SHAPES: Readonly<Record<'system' | 'user' | 'assistant', MessageShape>> = Object.freeze({
  system: Object.freeze({ role: 'system' }),
  user: Object.freeze({ role: 'user' }),
  assistant: Object.freeze({ role: 'assistant' }),
});
