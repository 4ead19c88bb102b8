/**
 * The Chat Completions request body as the test server receives it, and what a policy
 * answers. Policies see exactly what a real model would: the JSON the client sent.
 */
import type { ChatMessage } from '../history/messages.js';

export interface WireTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: WireTool[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number;
  max_completion_tokens?: number;
  [key: string]: unknown;
}

export interface PolicyReply {
  content?: string | null;
  toolCalls?: { id?: string; name: string; arguments: string }[];
  /** Defaults to `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
}

export interface PolicyContext {
  /** 0-based index of this request on the server (or the in-process model). */
  index: number;
}

export type Policy = (request: ChatRequest, context: PolicyContext) => PolicyReply | Promise<PolicyReply>;

/** A body whose messages' content parts are joined into their text (a part that is not text is named); with `keepMarked`, parts carrying cache_control marks stay as sent. */
export function withTextContent(body: ChatRequest, options: { keepMarked?: boolean } = {}): ChatRequest {
  if (!Array.isArray(body?.messages) || !body.messages.some((m) => Array.isArray((m as { content?: unknown }).content))) return body;
  const marked = (parts: unknown[]): boolean => parts.some((p) => !!(p as { cache_control?: unknown } | null)?.cache_control);
  const text = (parts: unknown[]): string =>
    parts
      .map((p) => {
        const part = p as { type?: unknown; text?: unknown; refusal?: unknown };
        return typeof part.text === 'string' ? part.text : typeof part.refusal === 'string' ? part.refusal : `[${String(part.type)}]`;
      })
      .join('\n');
  const messages = body.messages.map((m) => {
    const content = (m as { content?: unknown }).content;
    return Array.isArray(content) && !(options.keepMarked && marked(content)) ? ({ ...m, content: text(content) } as typeof m) : m;
  });
  return { ...body, messages };
}
