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
import { boundedCounter } from './boundedCount.js';

/** Special tokens such as `<|endoftext|>` are plain text to us: tool output may contain them. */
const PLAIN = { disallowedSpecial: new Set<string>() } as const;
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

interface EncodingModule {
  countTokens(text: string, options?: typeof PLAIN): number;
  /** Present when the encoding's models take function definitions; its formula is used with our counter. */
  countChatCompletionTokens?: unknown;
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
    const mod: Promise<EncodingModule> =
      encoding === 'cl100k_base' ? import('gpt-tokenizer/model/gpt-4') : import('gpt-tokenizer/model/gpt-4o');
    counter = Promise.all([mod, import('gpt-tokenizer/encodingParams/constants'), import('gpt-tokenizer/functionCalling')]).then(
      ([m, patterns, calling]) =>
        makeCounter(
          encoding,
          m,
          encoding === 'cl100k_base' ? patterns.CL100K_TOKEN_SPLIT_REGEX : patterns.O200K_TOKEN_SPLIT_REGEX,
          calling.computeChatCompletionTokenCount as unknown as ChatCount,
        ),
    );
    loaded.set(encoding, counter);
  }
  return counter;
}

/** `split`: the encoding's pre-tokenizer pattern; `chatCount`: gpt-tokenizer's request formula, fed our counter. */
function makeCounter(encoding: TokenCounter['encoding'], mod: EncodingModule, split: RegExp, chatCount: ChatCount): TokenCounter {
  const text = boundedCounter((s) => mod.countTokens(s, PLAIN), split);
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
      if (message.role === 'assistant' && message.tool_calls) {
        for (const call of message.tool_calls) {
          n += text(call.function.name) + text(call.function.arguments) + TOOL_CALL_FRAMING;
        }
      }
      return n;
    },
    requestBase(systemContent, tools) {
      const functions = tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
      if (!mod.countChatCompletionTokens) {
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
