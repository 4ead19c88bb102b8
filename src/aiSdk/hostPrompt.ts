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
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { LLMResponse } from '../llm/llm.js';
import type { ToolSpec } from '../tools/tool.js';
import { PartAssembler } from './partAssembler.js';

export function messagesOf(prompt: LanguageModelV3Prompt): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const message of prompt) {
    switch (message.role) {
      case 'system':
        out.push({ role: 'system', content: message.content });
        break;
      case 'user':
        out.push({ role: 'user', content: message.content.map((p) => (p.type === 'text' ? p.text : fileNote(p.mediaType))).join('') });
        break;
      case 'assistant': {
        let text = '';
        const calls: ToolCall[] = [];
        for (const part of message.content) {
          if (part.type === 'text') text += part.text;
          else if (part.type === 'tool-call' && !part.providerExecuted)
            calls.push({ id: part.toolCallId, type: 'function', function: { name: part.toolName, arguments: argumentsOf(part.input) } });
        }
        out.push(calls.length ? { role: 'assistant', content: text || null, tool_calls: calls } : { role: 'assistant', content: text });
        break;
      }
      case 'tool':
        for (const part of message.content)
          if (part.type === 'tool-result') out.push({ role: 'tool', tool_call_id: part.toolCallId, content: outputText(part.output) });
        break;
    }
  }
  return out;
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
