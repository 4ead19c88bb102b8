/**
 * workmem's request (Chat Completions messages) as an AI SDK LanguageModelV3 prompt, with
 * cache breakpoints where the request says its stable parts end, for providers with
 * explicit prompt caching.
 */
import type { LanguageModelV3FunctionTool, LanguageModelV3Message, SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { LLMRequest } from '../llm/llm.js';
import type { ChatMessage } from '../history/messages.js';
import type { ToolSpec } from '../tools/tool.js';
import { boundCallId, boundIdsOf } from '../llm/toolCallIds.js';
import { ConversionsByPlace } from '../llm/conversionsByPlace.js';
import { breakpointsOf } from '../llm/cacheBreakpoints.js';

/**
 * One breakpoint, in each provider's own words: Anthropic's cacheControl, Bedrock's
 * cachePoint, and cache_control on the wire for OpenAI-compatible gateways that pass it on
 * (OpenRouter, LiteLLM, workmem's test server).
 */
const CACHE_MARK: SharedV3ProviderOptions = {
  anthropic: { cacheControl: { type: 'ephemeral' } },
  bedrock: { cachePoint: { type: 'default' } },
  openaiCompatible: { cache_control: { type: 'ephemeral' } },
};

export function toolsOf(tools: readonly ToolSpec[]): LanguageModelV3FunctionTool[] {
  return tools.map((t) => ({ type: 'function', name: t.name, description: t.description, inputSchema: t.parameters as never }));
}

/**
 * The prompt. With `explicit`, a message a breakpoint names is marked (its last part too,
 * where providers read it), and a breakpoint inside a system message splits it in two, so
 * the part before (the stable system prompt) is cached on its own. With `made`, a message
 * the last prompt held at the same place is not converted again.
 */
export function promptOf(request: LLMRequest, explicit: boolean, made?: MadePrompt): LanguageModelV3Message[] {
  const marks = explicit ? breakpointsOf(request.cacheBreakpoints ?? [], request.messages) : null;
  const { messages } = request;
  const nameOf = callNames(messages);
  const convert = (message: ChatMessage, index: number) => messageOf(boundIdsOf(message), nameOf(index), false);
  const out: LanguageModelV3Message[] = [];
  for (let index = 0; index < messages.length; index++) {
    const cuts = marks?.get(index);
    if (!cuts) {
      out.push(made ? made.at(index, messages[index]!, convert) : convert(messages[index]!, index));
      continue;
    }
    const message = boundIdsOf(messages[index]!);
    // A user message is split at its first cut (its own text before the request's tail), the first part marked.
    if (message.role === 'user' && cuts[0]! > 0 && cuts[0]! < message.content.length) {
      const cut = cuts[0]!;
      out.push({
        role: 'user',
        content: [
          { type: 'text', text: message.content.slice(0, cut), providerOptions: CACHE_MARK },
          { type: 'text', text: message.content.slice(cut) },
        ],
      });
      continue;
    }
    // Elsewhere a breakpoint marks the whole message; only a system message is split.
    if (message.role !== 'system') {
      out.push(messageOf(message, nameOf(index), true));
      continue;
    }
    let from = 0;
    for (const end of cuts) {
      if (end <= from || from >= message.content.length) continue;
      out.push({ role: 'system', content: message.content.slice(from, end), providerOptions: CACHE_MARK });
      from = end;
    }
    if (from < message.content.length) out.push({ role: 'system', content: message.content.slice(from) });
  }
  made?.end(messages.length);
  return out;
}

/** One model's prompts, converted by place (conversionsByPlace.ts). */
export type MadePrompt = ConversionsByPlace<LanguageModelV3Message>;

/**
 * The name of the tool a result at `index` answers, found among the calls before it; the
 * calls are read only once a result needs them, and each once.
 */
function callNames(messages: readonly ChatMessage[]): (index: number) => (id: string) => string {
  const names = new Map<string, string>();
  let read = 0;
  return (index) => (id) => {
    for (; read < index; read++) {
      const message = messages[read]!;
      // Keyed as sent: ids bounded (toolCallIds.ts), as the result's is.
      if (message.role === 'assistant') for (const call of message.tool_calls ?? []) names.set(boundCallId(call.id), call.function.name);
    }
    return names.get(id) ?? 'unknown';
  };
}

function messageOf(message: ChatMessage, nameOf: (id: string) => string, mark: boolean): LanguageModelV3Message {
  const options = mark ? { providerOptions: CACHE_MARK } : {};
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content, ...options };
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.content, ...options }], ...options };
    case 'assistant': {
      const calls = (message.tool_calls ?? []).map((c) => ({
        type: 'tool-call' as const,
        toolCallId: c.id,
        toolName: c.function.name,
        input: parseArguments(c.function.arguments),
      }));
      const parts = [...(message.content ? [{ type: 'text' as const, text: message.content }] : []), ...calls];
      if (!parts.length) parts.push({ type: 'text', text: '' });
      if (mark) Object.assign(parts[parts.length - 1]!, options);
      return { role: 'assistant', content: parts, ...options };
    }
    case 'tool':
      return {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: message.tool_call_id,
            toolName: nameOf(message.tool_call_id),
            output: { type: 'text', value: message.content },
            ...options,
          },
        ],
        ...options,
      };
  }
}

/** The model's arguments as sent back: parsed when they are JSON, else the text it wrote. */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
