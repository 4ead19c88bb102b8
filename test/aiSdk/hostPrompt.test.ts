import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { conversationOf } from '../../src/aiSdk/hostPrompt.js';
import { shapeOf } from '../../src/history/hostLine.js';
import type { ChatMessage } from '../../src/history/messages.js';

const text = (t: string) => ({ type: 'text' as const, text: t });
const result = (id: string, value: string) => ({
  type: 'tool-result' as const,
  toolCallId: id,
  toolName: 'lookup',
  output: { type: 'text' as const, value },
});
const call = (id: string) => ({ type: 'tool-call' as const, toolCallId: id, toolName: 'lookup', input: { q: id } });

/** Every message of the view, read by index, and its shape. */
function read(prompt: LanguageModelV3Prompt): { instructions: string | undefined; messages: ChatMessage[] } {
  const { instructions, conversation } = conversationOf(prompt);
  const messages = Array.from({ length: conversation.length }, (_, i) => conversation.at(i));
  // A shape read without converting is the converted message's shape.
  messages.forEach((m, i) => expect(conversation.shape!(i)).toEqual(shapeOf(m)));
  return { instructions, messages };
}

describe("an AI SDK host's prompt, read by index", () => {
  const conversation: LanguageModelV3Prompt = [
    { role: 'user', content: [text('find a')] },
    { role: 'assistant', content: [text('Looking.'), call('c1')] },
    { role: 'tool', content: [result('c1', 'a is 1')] },
    { role: 'assistant', content: [text('a is 1.')] },
  ];
  const expected: ChatMessage[] = [
    { role: 'user', content: 'find a' },
    {
      role: 'assistant',
      content: 'Looking.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"c1"}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'a is 1' },
    { role: 'assistant', content: 'a is 1.' },
  ];

  it('leaves out the system messages that open it, and reads the rest in order', () => {
    const { instructions, messages } = read([
      { role: 'system', content: 'Rule one.' },
      { role: 'system', content: 'Rule two.' },
      ...conversation,
    ]);
    expect(instructions).toBe('Rule one.\n\nRule two.');
    expect(messages).toEqual(expected);
  });

  it('reads a system message in the middle and a tool message of several results the same way', () => {
    const { instructions, messages } = read([
      { role: 'system', content: 'Rule one.' },
      ...conversation,
      { role: 'system', content: 'Rule two.' },
      { role: 'user', content: [text('find b and c')] },
      { role: 'assistant', content: [call('c2'), call('c3')] },
      { role: 'tool', content: [result('c2', 'b is 2'), result('c3', 'c is 3')] },
    ]);
    expect(instructions).toBe('Rule one.\n\nRule two.');
    expect(messages).toEqual([
      ...expected,
      { role: 'user', content: 'find b and c' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c2', type: 'function', function: { name: 'lookup', arguments: '{"q":"c2"}' } },
          { id: 'c3', type: 'function', function: { name: 'lookup', arguments: '{"q":"c3"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c2', content: 'b is 2' },
      { role: 'tool', tool_call_id: 'c3', content: 'c is 3' },
    ]);
  });

  it('has no instructions when it holds no system message', () => {
    const { instructions, messages } = read(conversation);
    expect(instructions).toBeUndefined();
    expect(messages).toEqual(expected);
  });
});
