/**
 * Context windows of well-known models, matched by name prefix (longest first), so that
 * `tokens_max` is right without configuration. Config overrides; an unknown model gets
 * a conservative 32k.
 */
export interface ModelLimits {
  contextWindow: number;
  maxOutputTokens: number;
}

const KNOWN = (
  [
    ['gpt-5', 400_000, 128_000],
    ['gpt-4.1', 1_047_576, 32_768],
    ['gpt-4o', 128_000, 16_384],
    ['chatgpt-4o', 128_000, 16_384],
    ['gpt-4-turbo', 128_000, 4_096],
    ['gpt-4-32k', 32_768, 4_096],
    ['gpt-4', 8_192, 4_096],
    ['gpt-3.5-turbo', 16_385, 4_096],
    ['o1-mini', 128_000, 65_536],
    ['o1', 200_000, 100_000],
    ['o3', 200_000, 100_000],
    ['o4-mini', 200_000, 100_000],
    // Anthropic's (Claude Code's models, through the Messages door): 200k, more with a beta header.
    ['claude-opus-4', 200_000, 32_000],
    ['claude-sonnet-4', 200_000, 64_000],
    ['claude-haiku-4', 200_000, 64_000],
    ['claude-3-7-sonnet', 200_000, 64_000],
    ['claude', 200_000, 8_192],
    ['llama3.1', 131_072, 8_192],
    ['llama3.2', 131_072, 8_192],
    ['llama3.3', 131_072, 8_192],
    ['llama-3', 131_072, 8_192],
    ['qwen3', 40_960, 8_192],
    ['qwen2.5', 32_768, 8_192],
    ['mistral-nemo', 128_000, 8_192],
    ['mistral-small', 32_768, 8_192],
    ['deepseek', 128_000, 8_192],
    ['gemma3', 131_072, 8_192],
    ['gemma2', 8_192, 2_048],
    ['phi4', 16_384, 4_096],
  ] as [prefix: string, window: number, output: number][]
).sort((a, b) => b[0].length - a[0].length);

export const UNKNOWN_MODEL_WINDOW = 32_768;
const DEFAULT_RESERVE = 4_096;

/** The model's window and a sensible output reserve (at most 4096, at most a quarter of the window). */
export function modelLimits(model: string): ModelLimits & { known: boolean } {
  const name = model.toLowerCase().replace(/^.*\//, ''); // "openai/gpt-4o", "library/qwen2.5:7b"
  const hit = KNOWN.find(([prefix]) => name.startsWith(prefix));
  const contextWindow = hit?.[1] ?? UNKNOWN_MODEL_WINDOW;
  const output = hit?.[2] ?? DEFAULT_RESERVE;
  return { contextWindow, maxOutputTokens: Math.min(output, DEFAULT_RESERVE, Math.floor(contextWindow / 4)), known: !!hit };
}
