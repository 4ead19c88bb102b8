/**
 * The usage a client is told: what the upstream reported for every call it made on the
 * client's behalf in one exchange (the first, those after workmem's tools ran, a retry after
 * an overflow was compacted), summed. Nothing is estimated or added: a call the upstream
 * reported no usage for makes the whole exchange's usage unknown, and the client gets none.
 */
import type { LLMUsage } from '../llm/llm.js';

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number };
}

export class UsageTotals {
  private prompt = 0;
  private completion = 0;
  private cached = 0;
  private anyCached = false;
  private written = 0;
  private anyWritten = false;
  private calls = 0;
  private unknown = false;

  add(usage: LLMUsage | null): void {
    this.calls++;
    if (!usage) {
      this.unknown = true;
      return;
    }
    this.prompt += usage.promptTokens;
    this.completion += usage.completionTokens;
    if (usage.cachedPromptTokens !== undefined) {
      this.cached += usage.cachedPromptTokens;
      this.anyCached = true;
    }
    if (usage.cacheWriteTokens !== undefined) {
      this.written += usage.cacheWriteTokens;
      this.anyWritten = true;
    }
  }

  /** Upstream calls made so far. */
  get count(): number {
    return this.calls;
  }

  wire(): WireUsage | null {
    if (this.unknown || this.calls === 0) return null;
    return {
      prompt_tokens: this.prompt,
      completion_tokens: this.completion,
      total_tokens: this.prompt + this.completion,
      ...(this.anyCached || this.anyWritten
        ? { prompt_tokens_details: { cached_tokens: this.cached, ...(this.anyWritten ? { cache_write_tokens: this.written } : {}) } }
        : {}),
    };
  }
}
