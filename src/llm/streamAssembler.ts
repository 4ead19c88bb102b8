/** Collects a streamed Chat Completion, chunk by chunk, into one response. */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { AssistantMessage } from '../history/messages.js';
import { LLMError, type LLMResponse, type LLMUsage } from './llm.js';

/** The server's token counts, when they are counts: a broken server's are ignored (we count ourselves). */
export function usageOf(
  usage: { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: unknown } | null | undefined,
): LLMUsage | null {
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!usage || !count(usage.prompt_tokens) || !count(usage.completion_tokens)) return null;
  // OpenAI's automatic prefix caching reports its hits here.
  const cached = (usage.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined)?.cached_tokens;
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    ...(count(cached) && cached <= usage.prompt_tokens ? { cachedPromptTokens: cached } : {}),
  };
}

/** Collects a streamed completion: text, tool calls split over many chunks, usage. */
export class Assembler {
  private text = '';
  private calls: { id: string; name: string; arguments: string }[] = [];
  private finishReason: string | null = null;
  private usage: LLMUsage | null = null;
  /** Text, tool names and arguments received so far. */
  outputChars = 0;

  /** The chunk's text, and whether it carried anything at all (content, a tool call, the end). */
  add(chunk: ChatCompletionChunk): { text: string; progress: boolean } {
    if (chunk.usage) this.usage = usageOf(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) return { text: '', progress: false };
    const delta = choice.delta ?? {};
    const before = this.outputChars;
    for (const part of delta.tool_calls ?? []) {
      const index = typeof part.index === 'number' ? part.index : this.calls.length - (part.id ? 0 : 1);
      const call = (this.calls[index] ??= { id: '', name: '', arguments: '' });
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      this.outputChars += (part.function?.name?.length ?? 0) + (part.function?.arguments?.length ?? 0);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const text = typeof delta.content === 'string' ? delta.content : '';
    this.text += text;
    this.outputChars += text.length;
    // A reasoning model's thinking (vLLM, DeepSeek, llama.cpp name it so) is content too: it holds
    // off the stall watchdog, and counts towards the output limit as it does towards max_tokens.
    const extra = delta as { reasoning_content?: unknown; reasoning?: unknown };
    for (const thought of [extra.reasoning_content, extra.reasoning]) if (typeof thought === 'string') this.outputChars += thought.length;
    return { text, progress: this.outputChars > before || !!choice.finish_reason };
  }

  finish(): LLMResponse {
    if (this.finishReason === null) {
      throw new LLMError('network', 'the stream ended before the model finished (no finish_reason); the connection was probably cut');
    }
    const calls = this.calls.filter(Boolean);
    const message: AssistantMessage = { role: 'assistant', content: this.text || null };
    if (calls.length)
      message.tool_calls = calls.map((c, i) => ({
        id: c.id || `call_${i}`,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      }));
    return { message, usage: this.usage, finishReason: this.finishReason };
  }
}
