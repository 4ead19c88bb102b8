/**
 * What a LangChain agent holds, in workmem's words, and back: its messages (BaseMessage) as
 * Chat Completions messages, read by index, its tools as tool specs, the model's AIMessage
 * as a response (usage with the cache reads), and workmem's request as the messages to send.
 * Text is what workmem keeps: an image or file block becomes a note naming it.
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage, type MessageContent } from '@langchain/core/messages';
import type { ClientTool, ServerTool } from '@langchain/core/tools';
import { convertToOpenAITool, isLangChainTool } from '@langchain/core/utils/function_calling';
import type { HostConversation } from '../../machines/sessionMachine.js';
import { PLAIN_SHAPES, type ChatMessage, type MessageShape, type ToolCall } from '../history/messages.js';
import type { LLMResponse, LLMUsage } from '../llm/llm.js';
import type { ToolSpec } from '../tools/tool.js';
import type { ConversionsByPlace } from '../llm/conversionsByPlace.js';

/**
 * The agent's system message as the call's instructions, and its messages as the
 * conversation, converted only when read (a long loop hands over all of them each call, and
 * workmem reads the first, the last and what is new). A human message whose
 * `additional_kwargs` say `workmem: { pinned: true }` is pinned.
 */
export function conversationOf(
  system: BaseMessage | undefined,
  messages: readonly BaseMessage[],
): { instructions: string | undefined; conversation: HostConversation } {
  const converted: ChatMessage[] = [];
  const instructions = system ? textOf(system.content) : '';
  return {
    instructions: instructions || undefined,
    conversation: {
      length: messages.length,
      at: (i) => (converted[i] ??= messageOf(messages[i]!)),
      pinned: (i) => isPinned(messages[i]!),
      shape: (i) => shapeOf(messages[i]!),
      // The agent's state keeps its messages from call to call, the same objects.
      identity: (i) => messages[i],
    },
  };
}

/** `additional_kwargs: { workmem: { pinned: true } }` on a message (only a human one may say so). */
export function isPinned(message: BaseMessage): boolean {
  const workmem = message.additional_kwargs?.workmem as { pinned?: unknown } | undefined;
  if (workmem?.pinned !== true) return false;
  if (message.type !== 'human')
    throw new TypeError(`workmem/langchain: a ${message.type} message is marked pinned, but only a human message can be pinned`);
  return true;
}

/** A message's shape as messageOf would convert it, without converting its text. */
function shapeOf(message: BaseMessage): MessageShape {
  switch (message.type) {
    case 'human':
      return PLAIN_SHAPES.user;
    case 'system':
      return PLAIN_SHAPES.system;
    case 'tool':
      return { role: 'tool', toolCallId: (message as ToolMessage).tool_call_id };
    case 'ai': {
      // Most answers call nothing: their calls are read before the (dearer) class check.
      const { tool_calls, invalid_tool_calls } = message as AIMessage;
      if (!(tool_calls?.length || invalid_tool_calls?.length) || !AIMessage.isInstance(message)) return PLAIN_SHAPES.assistant;
      const calls = [...(message.tool_calls ?? []), ...(message.invalid_tool_calls ?? [])].map((c) => ({
        id: c.id ?? '',
        name: c.name ?? '',
      }));
      return calls.length ? { role: 'assistant', calls } : PLAIN_SHAPES.assistant;
    }
    default:
      return PLAIN_SHAPES[messageOf(message).role === 'user' ? 'user' : 'assistant']; // messageOf refuses the others
  }
}

/** One LangChain message as a Chat Completions message. */
export function messageOf(message: BaseMessage): ChatMessage {
  switch (message.type) {
    case 'system':
      return { role: 'system', content: textOf(message.content) };
    case 'human':
      return { role: 'user', content: textOf(message.content) };
    case 'ai': {
      const text = textOf(message.content);
      const calls = AIMessage.isInstance(message) ? toolCallsOf(message) : [];
      return calls.length ? { role: 'assistant', content: text || null, tool_calls: calls } : { role: 'assistant', content: text };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: (message as ToolMessage).tool_call_id, content: textOf(message.content) };
    default:
      throw new TypeError(`workmem/langchain: a ${message.type} message has no place in a chat history (human, ai, tool or system)`);
  }
}

/** The calls an AIMessage made, parsed or not: arguments as JSON text, as Chat Completions keeps them. */
function toolCallsOf(message: AIMessage): ToolCall[] {
  const calls = [
    ...(message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name, args: JSON.stringify(c.args ?? {}) })),
    ...(message.invalid_tool_calls ?? []).map((c) => ({ id: c.id, name: c.name ?? '', args: c.args ?? '' })),
  ];
  return calls.map((c) => {
    if (!c.id) throw new TypeError(`workmem/langchain: the model's call to ${c.name || 'a tool'} has no id, so no result can answer it`);
    return { id: c.id, type: 'function', function: { name: c.name, arguments: c.args } };
  });
}

/** A message's text: its text blocks joined, any other block named. */
function textOf(content: MessageContent): string {
  if (typeof content === 'string') return content;
  return content
    .map((block) => {
      if (block.type === 'text') return typeof block.text === 'string' ? block.text : '';
      // Reasoning and the tool calls repeated as blocks are not the message's text.
      if (/^(tool_use|tool_call|reasoning|thinking|reasoning_content)$/.test(block.type)) return '';
      const mime = block.mimeType ?? block.mime_type;
      return `[a ${typeof mime === 'string' ? mime : block.type} attachment: not kept by workmem]`;
    })
    .join('');
}

/** A tool's spec, made once: a zod schema's conversion to JSON Schema is not free, and the agent sends its tools every call. */
const specs = new WeakMap<object, ToolSpec>();

/** The agent's tools as the specs the session records (the function definitions a chat model binds). */
export function toolSpecsOf(tools: readonly (ClientTool | ServerTool)[]): ToolSpec[] {
  return tools.flatMap((tool) => {
    if (!isLangChainTool(tool)) return [];
    let spec = specs.get(tool);
    if (!spec) {
      const { function: f } = convertToOpenAITool(tool);
      spec = { name: f.name, description: f.description ?? '', parameters: f.parameters as Record<string, unknown> };
      specs.set(tool, spec);
    }
    return [spec];
  });
}

/** The model's answer as the response the session records. */
export function responseOf(message: AIMessage): LLMResponse {
  const recorded = messageOf(message);
  const calls = recorded.role === 'assistant' ? (recorded.tool_calls?.length ?? 0) : 0;
  const finish = message.response_metadata?.finish_reason ?? message.response_metadata?.stop_reason;
  return {
    message: recorded as LLMResponse['message'],
    usage: usageOf(message),
    finishReason: typeof finish === 'string' ? finish : calls ? 'tool_calls' : 'stop',
  };
}

function usageOf(message: AIMessage): LLMUsage | null {
  const usage = message.usage_metadata;
  if (!usage || !Number.isFinite(usage.input_tokens) || !Number.isFinite(usage.output_tokens)) return null;
  const cached = usage.input_token_details?.cache_read;
  return {
    promptTokens: usage.input_tokens,
    completionTokens: usage.output_tokens,
    ...(typeof cached === 'number' && cached >= 0 && cached <= usage.input_tokens ? { cachedPromptTokens: cached } : {}),
  };
}

/**
 * A history message as LangChain's, made once: a request carries the same history messages
 * (the same objects) call after call, and only its system message and its last are new.
 */
const converted = new WeakMap<ChatMessage, BaseMessage>();

/**
 * workmem's request as what the agent's model is called with: its system message apart
 * (the agent sends it first), the rest as LangChain messages. Tool calls carry their
 * arguments parsed, as LangChain keeps them; arguments that are not JSON stay as written.
 */
export function requestMessagesOf(
  messages: readonly ChatMessage[],
  byPlace?: RequestMessages,
): { system: SystemMessage; messages: BaseMessage[] } {
  const from = messages[0]?.role === 'system' ? 1 : 0;
  const out: BaseMessage[] = [];
  for (let i = from; i < messages.length; i++) out.push(byPlace ? byPlace.at(i, messages[i]!, convertedOnce) : convertedOnce(messages[i]!));
  byPlace?.end(messages.length);
  return { system: systemMessageOf(from === 1 ? (messages[0]!.content ?? '') : ''), messages: out };
}

/** One session's requests, converted by place (conversionsByPlace.ts): given to requestMessagesOf, a message the last request held at the same place is not looked up again. */
export type RequestMessages = ConversionsByPlace<BaseMessage>;

function convertedOnce(message: ChatMessage): BaseMessage {
  let made = converted.get(message);
  if (!made) converted.set(message, (made = langchainMessageOf(message)));
  return made;
}

/** The system message changes only with the memory: the last one made is made again only then. */
let lastSystem: { content: string; message: SystemMessage } | null = null;

function systemMessageOf(content: string): SystemMessage {
  if (lastSystem?.content !== content) lastSystem = { content, message: new SystemMessage(content) };
  return lastSystem.message;
}

function langchainMessageOf(message: ChatMessage): BaseMessage {
  switch (message.role) {
    case 'system':
      return new SystemMessage(message.content);
    case 'user':
      return new HumanMessage(message.content);
    case 'tool':
      return new ToolMessage({ content: message.content, tool_call_id: message.tool_call_id });
    case 'assistant': {
      const tool_calls: NonNullable<AIMessage['tool_calls']> = [];
      const invalid_tool_calls: NonNullable<AIMessage['invalid_tool_calls']> = [];
      for (const c of message.tool_calls ?? []) {
        const args = parsedArguments(c.function.arguments);
        if (args) tool_calls.push({ id: c.id, name: c.function.name, args, type: 'tool_call' });
        else
          invalid_tool_calls.push({
            id: c.id,
            name: c.function.name,
            args: c.function.arguments,
            error: 'not a JSON object',
            type: 'invalid_tool_call',
          });
      }
      return new AIMessage({ content: message.content ?? '', tool_calls, invalid_tool_calls });
    }
  }
}

function parsedArguments(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
