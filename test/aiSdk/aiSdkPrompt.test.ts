import { describe, expect, it } from 'vitest';
import { promptOf, type MadePrompt } from '../../src/aiSdk/aiSdkPrompt.js';
import { ConversionsByPlace } from '../../src/llm/conversionsByPlace.js';
import type { ChatMessage } from '../../src/history/messages.js';
import type { LLMRequest } from '../../src/llm/llm.js';

const call = (id: string, name: string) => ({ id, type: 'function' as const, function: { name, arguments: `{"q":"${id}"}` } });

/** Turns of a question, an answer that calls a tool, its result and a text answer. */
const history: ChatMessage[] = Array.from({ length: 80 }, (_, t): ChatMessage[] => [
  { role: 'user', content: `Question ${t}` },
  { role: 'assistant', content: null, tool_calls: [call(`c${t}`, t % 2 ? 'lookup' : 'write')] },
  { role: 'tool', tool_call_id: `c${t}`, content: `Result ${t}` },
  { role: 'assistant', content: `Answer ${t}` },
]).flat();

const request = (messages: ChatMessage[], marks: number[] = []): LLMRequest => ({
  messages,
  tools: [],
  maxOutputTokens: 100,
  cacheBreakpoints: marks.map((message) => (message === 0 ? { message, chars: 5 } : { message })),
});

describe('the AI SDK prompt of one model, converted by place from its last', () => {
  it('is the prompt converted afresh, call after call, as the history grows, is compacted and its breakpoints move', () => {
    const system: ChatMessage = { role: 'system', content: 'System. Memory.' };
    const requests = [
      request([system, ...history.slice(0, 200)], [0, 150]),
      request([system, ...history.slice(0, 204)], [0, 199]),
      // A compaction: a note where the first 120 were.
      request([system, { role: 'user', content: '[compacted]' }, ...history.slice(120, 210)], [0, 60]),
      // A result whose call is not in the request.
      request([{ role: 'tool', tool_call_id: 'gone', content: 'Orphan' }, ...history.slice(122, 212)]),
    ];
    // A call whose id no provider would send: bounded in the call and in its result, which is still named after it.
    const long = 'x'.repeat(100);
    requests.push(
      request([
        ...history.slice(130, 140),
        { role: 'assistant', content: null, tool_calls: [call(long, 'search')] },
        { role: 'tool', tool_call_id: long, content: 'Found.' },
      ]),
    );
    const made: MadePrompt = new ConversionsByPlace();
    for (const explicit of [false, true]) for (const r of requests) expect(promptOf(r, explicit, made)).toEqual(promptOf(r, explicit));
    // The system message split at its breakpoint, the note, then turn 30: its result named after its call.
    const prompt = promptOf(requests[2]!, true, made);
    expect(prompt[5]).toMatchObject({ role: 'tool', content: [{ toolName: 'write', toolCallId: 'c30' }] });
    expect(promptOf(requests[3]!, false)[0]).toMatchObject({ content: [{ toolName: 'unknown' }] });
    const bounded = promptOf(requests[4]!, false, made);
    const id = (bounded[10]!.content as { toolCallId: string }[])[0]!.toolCallId;
    expect(id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(bounded[11]).toMatchObject({ role: 'tool', content: [{ toolCallId: id, toolName: 'search' }] });
  });
});
