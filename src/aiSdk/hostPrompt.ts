/**
 * What an AI SDK host's loop holds, in workmem's words: its prompt (LanguageModelV3Prompt)
 * as Chat Completions messages, its function tools as tool specs, and a model's generate
 * result as a response. The other way (workmem's request as a prompt) is aiSdkPrompt.ts.
 * Text is what workmem keeps: a file or image part becomes a note naming it.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider';
import type { HostConversation } from '../../machines/sessionMachine.js';
import { PLAIN_SHAPES, type ChatMessage, type MessageShape, type ToolCall } from '../history/messages.js';
import type { LLMResponse } from '../llm/llm.js';
import type { ToolSpec } from '../tools/tool.js';
import { keptPositions } from '../history/keptPositions.js';
import { PartAssembler } from './partAssembler.js';

/**
 * The prompt as a host call's instructions (its system messages) and conversation, read by
 * index: only the messages read are converted (a long loop hands over all of them each call,
 * and workmem reads the first, the last and what is new). A message whose providerOptions
 * say `workmem: { pinned: true }` is pinned (a user message only).
 */
export function conversationOf(prompt: LanguageModelV3Prompt): { instructions: string | undefined; conversation: HostConversation } {
  const system: number[] = [];
  // A tool message most often holds one result: then each message other than the system ones
  // is one conversation message, read by position (keptPositions); else results are listed.
  let oneResultEach = true;
  prompt.forEach((message, i) => {
    if (message.role === 'system') {
      if (isPinned(message)) throw new TypeError('a system message is marked pinned, but only a user message can be pinned');
      system.push(i);
    } else if (message.role === 'tool' && (message.content.length !== 1 || message.content[0]!.type !== 'tool-result'))
      oneResultEach = false;
  });
  // Where each conversation message is: the prompt's message, and for a tool message its part.
  let at: (i: number) => number;
  let part: (i: number) => number = () => 0;
  let length: number;
  if (oneResultEach) ({ length, at } = keptPositions(prompt.length, system));
  else {
    const messages: number[] = [];
    const parts: number[] = [];
    prompt.forEach((message, i) => {
      if (message.role === 'system') return;
      if (message.role !== 'tool') return void (messages.push(i), parts.push(-1));
      message.content.forEach((p, j) => {
        if (p.type === 'tool-result') (messages.push(i), parts.push(j));
      });
    });
    at = (i) => messages[i]!;
    part = (i) => parts[i]!;
    length = messages.length;
  }
  const converted: ChatMessage[] = [];
  return {
    instructions: system.length ? system.map((i) => (prompt[i] as { content: string }).content).join('\n\n') : undefined,
    conversation: {
      length,
      at: (i) => (converted[i] ??= messageAt(prompt[at(i)]!, part(i))),
      pinned: (i) => isPinned(prompt[at(i)]!),
      shape: (i) => shapeAt(prompt[at(i)]!, part(i)),
      // The AI SDK makes the prompt's messages anew each call, from the host's, whose texts and call ids it keeps.
      identity: (i) => identityAt(prompt[at(i)]!, part(i)),
    },
  };
}

/** What stays the same for a prompt message from call to call: its text, or the call it makes or answers. */
function identityAt(message: LanguageModelV3Prompt[number], part: number): unknown {
  if (typeof message.content === 'string') return message.content;
  const first = message.content[part];
  if (!first) return message;
  if ('text' in first) return first.text;
  if ('toolCallId' in first) return first.toolCallId;
  return first;
}

/** `providerOptions: { workmem: { pinned: true } }` on a message (ModelMessage or prompt message). */
function isPinned(message: LanguageModelV3Prompt[number]): boolean {
  const workmem = message.providerOptions?.workmem as { pinned?: unknown } | undefined;
  return workmem?.pinned === true;
}

/** The prompt as Chat Completions messages, every one converted. */
export function messagesOf(prompt: LanguageModelV3Prompt): ChatMessage[] {
  const { instructions, conversation } = conversationOf(prompt);
  const out: ChatMessage[] = instructions === undefined ? [] : [{ role: 'system', content: instructions }];
  for (let i = 0; i < conversation.length; i++) out.push(conversation.at(i));
  return out;
}

/** A message's shape as messageAt would convert it, without converting it. */
function shapeAt(message: LanguageModelV3Prompt[number], part: number): MessageShape {
  switch (message.role) {
    case 'assistant': {
      let calls: { id: string; name: string }[] | null = null;
      for (const p of message.content)
        if (p.type === 'tool-call' && !p.providerExecuted) (calls ??= []).push({ id: p.toolCallId, name: p.toolName });
      return calls ? { role: 'assistant', calls } : PLAIN_SHAPES.assistant;
    }
    case 'tool': {
      const result = message.content[part];
      return { role: 'tool', toolCallId: result?.type === 'tool-result' ? result.toolCallId : '' };
    }
    default:
      return PLAIN_SHAPES[message.role];
  }
}

function messageAt(message: LanguageModelV3Prompt[number], part: number): ChatMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content.map((p) => (p.type === 'text' ? p.text : fileNote(p.mediaType))).join('') };
    case 'assistant': {
      let text = '';
      const calls: ToolCall[] = [];
      for (const p of message.content) {
        if (p.type === 'text') text += p.text;
        else if (p.type === 'tool-call' && !p.providerExecuted)
          calls.push({ id: p.toolCallId, type: 'function', function: { name: p.toolName, arguments: argumentsOf(p.input) } });
      }
      return calls.length ? { role: 'assistant', content: text || null, tool_calls: calls } : { role: 'assistant', content: text };
    }
    case 'tool': {
      const result = message.content[part]!;
      if (result.type !== 'tool-result') throw new Error('not a tool result');
      return { role: 'tool', tool_call_id: result.toolCallId, content: outputText(result.output) };
    }
  }
}

export function toolSpecsOf(tools: LanguageModelV3CallOptions['tools']): ToolSpec[] {
  return (tools ?? []).flatMap((t) =>
    t.type === 'function' ? [{ name: t.name, description: t.description ?? '', parameters: t.inputSchema as Record<string, unknown> }] : [],
  );
}

/** A generate result as the response the session records. */
export function responseOf(result: LanguageModelV3GenerateResult): LLMResponse {
  const assembled = new PartAssembler();
  for (const part of result.content) {
    if (part.type === 'text') assembled.add({ type: 'text-delta', id: 'text', delta: part.text });
    else if (part.type === 'tool-call') assembled.add(part);
  }
  assembled.add({ type: 'finish', finishReason: result.finishReason, usage: result.usage });
  return assembled.finish();
}

function argumentsOf(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input ?? {});
}

/** A tool's output as the text the model reads (a string result is the string itself, as a Session keeps it). */
function outputText(output: LanguageModelV3ToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value);
    case 'execution-denied':
      return `Tool execution denied${output.reason ? `: ${output.reason}` : ''}.`;
    case 'content':
      return output.value.map((p) => (p.type === 'text' ? p.text : fileNote('mediaType' in p ? String(p.mediaType) : 'file'))).join('');
  }
}

function fileNote(mediaType: string): string {
  return `[a ${mediaType} attachment: not kept by workmem]`;
}
