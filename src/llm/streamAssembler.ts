/** Collects a streamed Chat Completion, chunk by chunk, into one response. */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { AssistantMessage } from '../history/messages.js';
import { LLMError, type LLMResponse, type LLMUsage } from './llm.js';

/** The server's token counts, when they are counts: a broken server's are ignored (we count ourselves). */
export function usageOf(
  usage:
    | { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: unknown; cache_creation_input_tokens?: unknown }
    | null
    | undefined,
): LLMUsage | null {
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!usage || !count(usage.prompt_tokens) || !count(usage.completion_tokens)) return null;
  // OpenAI's automatic prefix caching reports its hits here; gateways over explicit caching
  // their writes beside them (OpenRouter) or in Anthropic's own field (LiteLLM).
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown; cache_write_tokens?: unknown } | null | undefined;
  const cached = details?.cached_tokens;
  const written = details?.cache_write_tokens ?? usage.cache_creation_input_tokens;
  const fits = (n: unknown, other = 0): n is number => count(n) && n + other <= (usage.prompt_tokens as number);
  const read = fits(cached) ? cached : 0;
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    ...(fits(cached) ? { cachedPromptTokens: cached } : {}),
    ...(fits(written, read) && written > 0 ? { cacheWriteTokens: written } : {}),
  };
}

const NOTHING = { text: '', progress: false };

/** Collects a streamed completion: text, tool calls split over many chunks, usage. */
export class Assembler {
  private text = '';
  private calls: { id: string; name: string; arguments: string }[] = [];
  private finishReason: string | null = null;
  private usage: LLMUsage | null = null;
  /** What the server sent of the answer so far (text, reasoning, tool names, arguments and ids), for the output limit. */
  outputChars = 0;
  /** The answer is over: its finish came, and with it or just after it the usage. Nothing past it is read. */
  ended = false;

  /** The chunk's text, and whether it carried output (text, reasoning, a tool call's name or arguments): only that is progress. */
  add(chunk: ChatCompletionChunk): { text: string; progress: boolean } {
    if (chunk.usage) this.usage = usageOf(chunk.usage);
    if (this.finishReason !== null) {
      // Past the finish only the usage is taken: a server that keeps sending (more finishes, keep-alives) is not read on.
      this.ended = true;
      return NOTHING;
    }
    const choice = chunk.choices?.[0];
    if (!choice) return NOTHING;
    const delta = choice.delta ?? {};
    let output = 0;
    for (const part of delta.tool_calls ?? []) {
      const index = typeof part.index === 'number' ? part.index : this.calls.length - (part.id ? 0 : 1);
      const call = (this.calls[index] ??= { id: '', name: '', arguments: '' });
      if (part.id) {
        call.id = part.id;
        this.outputChars += part.id.length;
      }
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      output += (part.function?.name?.length ?? 0) + (part.function?.arguments?.length ?? 0);
    }
    const text = typeof delta.content === 'string' ? delta.content : '';
    this.text += text;
    output += text.length;
    // A reasoning model's thinking (vLLM, DeepSeek, llama.cpp name it so) is output too: it holds
    // off the stall watchdog, and counts towards the output limit as it does towards max_tokens.
    const extra = delta as { reasoning_content?: unknown; reasoning?: unknown };
    for (const thought of [extra.reasoning_content, extra.reasoning]) if (typeof thought === 'string') output += thought.length;
    this.outputChars += output;
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.outputChars += choice.finish_reason.length;
      this.ended = !!chunk.usage;
    }
    return { text, progress: output > 0 };
  }

  /** The finish has come (what follows it is not needed for the answer). */
  get finished(): boolean {
    return this.finishReason !== null;
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
