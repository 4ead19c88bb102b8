/**
 * Which of an AI SDK loop's own messages (ModelMessage, as it passes them to generateText)
 * workmem has archived (archivedHostMessages.ts): read as the middleware reads the prompt
 * the SDK makes of them, a string content being one text part.
 */
import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { ModelMessage } from 'ai';
import { archivedHostRanges } from '../history/archivedHostMessages.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import { conversationOf } from './hostPrompt.js';

/** Indices into `messages`; none where a tool message holds several results (then the conversation is not one message each). */
export function archivedIndices(record: SessionRecord, messages: readonly ModelMessage[]): number[] {
  const positions: number[] = [];
  messages.forEach((m, i) => {
    if (m.role !== 'system') positions.push(i);
  });
  if (messages.some((m) => m.role === 'tool' && m.content.length !== 1)) return [];
  const prompt = messages.map((m) =>
    m.role !== 'system' && typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m,
  ) as unknown as LanguageModelV3Prompt;
  const out: number[] = [];
  for (const [start, end] of archivedHostRanges(record, conversationOf(prompt).conversation))
    for (let i = start; i < end; i++) out.push(positions[i]!);
  return out;
}
