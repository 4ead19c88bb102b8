import { describe, expect, it } from 'vitest';
import { shapeOf } from '../../src/history/hostLine.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { BadRequestError, readClientRequest } from '../../src/serve/chatWire.js';

const call = (id: string, name: string) => ({ id, type: 'function', function: { name, arguments: '{"x":1}' } });

/** Every message of the view, read by index. */
const all = (view: { length: number; at(i: number): ChatMessage }): ChatMessage[] =>
  Array.from({ length: view.length }, (_, i) => view.at(i));

describe("the proxy's reading of a client's request", () => {
  it('splits the system and developer messages off as instructions, wherever they are, and reads the rest by index', () => {
    const many = Array.from({ length: 6 }, (_, i) => ({ role: i % 2 ? 'developer' : 'system', content: `rule ${i}` }));
    for (const system of [[many[0]!], many]) {
      const request = readClientRequest({
        model: 'm',
        messages: [
          system[0],
          {
            role: 'user',
            content: [
              { type: 'text', text: 'part one' },
              { type: 'text', text: 'part two' },
            ],
            name: 'ann',
          },
          ...system.slice(1, 3),
          { role: 'assistant', content: null, tool_calls: [call('c1', 'lookup'), call('c2', 'read')] },
          { role: 'tool', tool_call_id: 'c1', content: 'found' },
          ...system.slice(3),
          { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'file' }] },
          { role: 'assistant', content: 'Done.', tool_calls: [] },
          { role: 'user', content: 'next' },
        ],
      });
      expect(request.instructions).toBe(system.map((m) => m.content).join('\n\n'));
      // Each with its role, to be sent as the client gave it.
      expect(request.instructionParts).toEqual(system.map((m) => ({ role: m.role, content: m.content })));
      const expected: ChatMessage[] = [
        { role: 'user', content: 'part one\npart two', name: 'ann' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"x":1}' } },
            { id: 'c2', type: 'function', function: { name: 'read', arguments: '{"x":1}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'found' },
        { role: 'tool', tool_call_id: 'c2', content: 'file' },
        { role: 'assistant', content: 'Done.' },
        { role: 'user', content: 'next' },
      ];
      expect(all(request.conversation)).toEqual(expected);
      // Shapes read from the wire are the converted messages' shapes.
      expect(expected.map((_, i) => request.conversation.shape(i))).toEqual(expected.map(shapeOf));
      // What workmem's exchange adds follows the client's messages.
      const more: ChatMessage[] = [{ role: 'assistant', content: 'and more' }];
      const extended = request.conversation.with(more);
      expect(all(extended)).toEqual([...expected, ...more]);
      expect(extended.shape(expected.length)).toEqual(shapeOf(more[0]!));
      expect(all(request.conversation)).toHaveLength(expected.length);
    }
  });

  it('keeps every message when the system messages are empty, as a host loop does', () => {
    const request = readClientRequest({
      model: 'm',
      messages: [
        { role: 'system', content: '' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(request.instructions).toBeUndefined();
    expect(all(request.conversation)).toEqual([
      { role: 'system', content: '' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('checks every message when the request is read, naming the one that is wrong', () => {
    const ok = Array.from({ length: 50 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` }));
    const cases: [unknown, string, string | null][] = [
      [{ role: 'robot', content: 'x' }, 'messages[30].role "robot" is not one of', null],
      [{ role: 'user' }, 'messages[30].content is required', null],
      [{ role: 'user', content: 7 }, 'messages[30].content must be text or an array of parts', null],
      [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] },
        'messages[30].content[0] is a "image_url" part',
        'unsupported_content',
      ],
      [{ role: 'assistant', content: null, tool_calls: [{ id: 'c' }] }, 'messages[30].tool_calls[0] needs an id', null],
      [{ role: 'assistant', content: 'x', tool_calls: 'no' }, 'messages[30].tool_calls must be an array', null],
      [{ role: 'tool', content: 'x' }, 'messages[30].tool_call_id is required', null],
    ];
    for (const [bad, message, code] of cases) {
      const messages = [...ok.slice(0, 30), bad, ...ok.slice(30)];
      let error: unknown;
      try {
        readClientRequest({ model: 'm', messages });
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(bad)).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).message).toContain(message);
      expect((error as BadRequestError).code).toBe(code);
    }
  });
});
