/**
 * Chat messages in the Chat Completions wire shape, so that what we store, what we
 * count and what we send are the same objects.
 */
import { z } from 'zod';

export const ToolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const ChatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(ToolCallSchema).optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof ChatMessageSchema>;
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;
export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;
export type UserMessage = Extract<ChatMessage, { role: 'user' }>;

/** The text of a message, empty for an assistant message that only calls tools. */
export function textOf(message: ChatMessage): string {
  return message.content ?? '';
}

/** The same message with `suffix` appended to its text; never mutates the original. */
export function withSuffix<M extends ChatMessage>(message: M, suffix: string): M {
  return { ...message, content: (message.content ?? '') + suffix };
}
