/**
 * Token counting with gpt-tokenizer. Each message is counted once, when it is added;
 * the per-message rule is OpenAI's published one (role + content + 3 framing tokens,
 * + name + arguments + 3 per tool call), so a whole request's count is the sum of its
 * parts plus a base that covers the system message, the tool definitions and priming.
 * Every text reaches the encoder through boundedCounter (a long run of one character
 * class costs linear time, not quadratic).
 */
import type { ChatMessage } from '../history/messages.js';
import type { ToolSpec } from '../tools/tool.js';
import { boundedCounter, type CountText } from './boundedCount.js';
import { loadBpeCounter } from './bpeCore.js';

const MESSAGE_FRAMING = 3;
const TOOL_CALL_FRAMING = 3;

export interface TokenCounter {
  readonly encoding: 'o200k_base' | 'cl100k_base';
  text(text: string): number;
  message(message: ChatMessage): number;
  /** System message + tool definitions + reply priming: everything a request has besides history. */
  requestBase(systemContent: string, tools: readonly ToolSpec[]): number;
  /** A whole request, whatever its shape (used by the test server to report usage). */
  request(messages: readonly ChatMessage[], tools: readonly ToolSpec[]): number;
}

type ChatCount = (
  request: { messages: { role: string; content: string }[]; functions?: unknown[] },
  countText: (text: string) => number,
) => number;

const loaded = new Map<string, Promise<TokenCounter>>();

/** cl100k for the GPT-4 / 3.5 generation, o200k for everything else (the usual default). */
export function encodingForModel(model: string): TokenCounter['encoding'] {
  return /^(gpt-4(?!o|\.1|\.5)|gpt-3\.5)/i.test(model) ? 'cl100k_base' : 'o200k_base';
}

export function loadTokenCounter(model = 'gpt-4o'): Promise<TokenCounter> {
  const encoding = encodingForModel(model);
  let counter = loaded.get(encoding);
  if (!counter) {
    // Loading an encoding costs ~150 ms: do it only when a session needs it.
    counter = Promise.all([loadBpeCounter(encoding), import('gpt-tokenizer/functionCalling')]).then(([bpe, calling]) =>
      makeCounter(
        encoding,
        bpe.count,
        bpe.split,
        // gpt-tokenizer counts function definitions for the o200k models (gpt-4o), not for gpt-4's cl100k.
        encoding === 'o200k_base' ? (calling.computeChatCompletionTokenCount as unknown as ChatCount) : null,
      ),
    );
    loaded.set(encoding, counter);
  }
  return counter;
}

/** `split`: the encoding's pre-tokenizer pattern; `chatCount`: gpt-tokenizer's request formula, fed our counter (null: none). */
function makeCounter(encoding: TokenCounter['encoding'], count: CountText, split: RegExp, chatCount: ChatCount | null): TokenCounter {
  const text = boundedCounter(count, split);
  const roleTokens = new Map<string, number>();
  const role = (r: string): number => {
    let n = roleTokens.get(r);
    if (n === undefined) roleTokens.set(r, (n = text(r)));
    return n;
  };
  return {
    encoding,
    text,
    message(message) {
      let n = role(message.role) + text(message.content ?? '') + MESSAGE_FRAMING;
      // A participant's name costs its tokens and one more (OpenAI's framing of `name`).
      if (message.role !== 'tool' && message.name) n += text(message.name) + 1;
      if (message.role === 'assistant' && message.tool_calls) {
        for (const call of message.tool_calls) {
          n += text(call.function.name) + text(call.function.arguments) + TOOL_CALL_FRAMING;
        }
      }
      return n;
    },
    requestBase(systemContent, tools) {
      const functions = tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
      if (!chatCount) {
        return role('system') + text(systemContent) + MESSAGE_FRAMING + 3 + text(JSON.stringify(functions));
      }
      return chatCount({ messages: [{ role: 'system', content: systemContent }], ...(functions.length ? { functions } : {}) }, text);
    },
    request(messages, tools) {
      const [first, ...rest] = messages;
      const sum = (list: readonly ChatMessage[]): number => list.reduce((n, m) => n + this.message(m), 0);
      if (first?.role === 'system') return this.requestBase(first.content, tools) + sum(rest);
      // No system message: the base without one (and without the system deduction for tools).
      const base = this.requestBase('', tools) - role('system') - MESSAGE_FRAMING + (tools.length ? 4 : 0);
      return base + sum(messages);
    },
  };
}
