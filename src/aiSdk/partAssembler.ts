/**
 * An AI SDK stream's parts collected into one response: text, tool calls (from their
 * deltas or whole), usage and the finish, in Chat Completions words. It also says which
 * parts are progress (output of our own: text, reasoning, a tool call to run) and counts
 * what every part carries towards the output limit, so that a stream of parts that add
 * nothing neither holds off the stall watchdog nor runs without end.
 */
import type { LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { LLMError, type LLMResponse, type LLMUsage } from '../llm/llm.js';
import type { AssistantMessage } from '../history/messages.js';

/** Collects a stream's parts: text, tool calls (from their deltas or whole), usage, the finish. */
export class PartAssembler {
  private text = '';
  private readonly calls = new Map<string, { name: string; input: string; done: boolean }>();
  private finishReason: string | null = null;
  private usage: LLMUsage | null = null;
  /** What the stream sent so far, for the output limit: every part counts, its text and one for itself. */
  outputChars = 0;

  get finished(): boolean {
    return this.finishReason !== null;
  }

  /** The part's text, and whether it added output (text, reasoning, a tool call of ours): only that is progress. */
  add(part: LanguageModelV3StreamPart): { text: string; progress: boolean } {
    this.outputChars += 1 + sizeOf(part);
    switch (part.type) {
      case 'text-delta':
        this.text += part.delta;
        return { text: part.delta, progress: part.delta.length > 0 };
      case 'reasoning-delta':
        return { text: '', progress: part.delta.length > 0 };
      case 'tool-input-start':
        // A provider-executed tool (a server-side search) is the provider's, not a call to run.
        if (part.providerExecuted || this.calls.has(part.id)) return NOTHING;
        this.calls.set(part.id, { name: part.toolName, input: '', done: false });
        return { text: '', progress: true };
      case 'tool-input-delta': {
        const call = this.calls.get(part.id);
        if (!call || call.done || !part.delta) return NOTHING;
        call.input += part.delta;
        return { text: '', progress: true };
      }
      case 'tool-call': {
        if (part.providerExecuted) return NOTHING;
        const before = this.calls.get(part.toolCallId);
        // The whole call is authoritative over the deltas that preceded it.
        this.calls.set(part.toolCallId, { name: part.toolName, input: part.input, done: true });
        return { text: '', progress: !before?.done };
      }
      case 'finish':
        this.finishReason = finishOf(part.finishReason.unified, part.finishReason.raw);
        this.usage = usageOf(part.usage);
        return NOTHING;
      default:
        return NOTHING;
    }
  }

  finish(): LLMResponse {
    if (this.finishReason === null)
      throw new LLMError('network', 'the stream ended before the model finished (no finish part); the connection was probably cut');
    const message: AssistantMessage = { role: 'assistant', content: this.text || null };
    const calls = [...this.calls.entries()];
    if (calls.length)
      message.tool_calls = calls.map(([id, c], i) => ({
        id: id || `call_${i}`,
        type: 'function',
        function: { name: c.name, arguments: c.input },
      }));
    return { message, usage: this.usage, finishReason: this.finishReason };
  }
}

const NOTHING = { text: '', progress: false };

/** The characters a part carries (ids and names too: a server may send any string there). */
function sizeOf(part: LanguageModelV3StreamPart): number {
  switch (part.type) {
    case 'text-delta':
    case 'reasoning-delta':
    case 'tool-input-delta':
      return part.delta.length;
    case 'tool-input-start':
      return part.id.length + part.toolName.length;
    case 'tool-call':
      return part.toolCallId.length + part.toolName.length + part.input.length;
    case 'tool-result':
      return part.toolCallId.length + part.toolName.length;
    case 'file':
      return typeof part.data === 'string' ? part.data.length : part.data.byteLength;
    case 'finish':
      return part.finishReason.raw?.length ?? 0;
    default:
      return 0;
  }
}

/** The AI SDK's unified reasons in Chat Completions words, which the rest of workmem speaks. */
function finishOf(unified: string, raw: string | undefined): string {
  switch (unified) {
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    case 'stop':
    case 'length':
      return unified;
    default:
      return raw ?? unified;
  }
}

function usageOf(usage: LanguageModelV3Usage): LLMUsage | null {
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  const input = usage.inputTokens.total;
  const output = usage.outputTokens.total;
  if (!count(input) || !count(output)) return null;
  const cached = usage.inputTokens.cacheRead;
  const written = usage.inputTokens.cacheWrite;
  const read = count(cached) && cached <= input ? cached : null;
  return {
    promptTokens: input,
    completionTokens: output,
    ...(read !== null ? { cachedPromptTokens: read } : {}),
    ...(count(written) && written > 0 && written + (read ?? 0) <= input ? { cacheWriteTokens: written } : {}),
  };
}
