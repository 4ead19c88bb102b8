/** Known models' windows by name prefix: the longest prefix wins; a provider's prefix in the name is read past. */
import { describe, expect, it } from 'vitest';
import { modelLimits, UNKNOWN_MODEL_WINDOW } from '../../src/llm/models.js';

describe('modelLimits', () => {
  it('knows the models Codex and Claude Code run, and says so of one it does not know', () => {
    expect(modelLimits('claude-sonnet-4-5-20250929')).toMatchObject({ contextWindow: 200_000, known: true });
    expect(modelLimits('anthropic/claude-opus-4-1')).toMatchObject({ contextWindow: 200_000, known: true });
    expect(modelLimits('gpt-5.1-codex')).toMatchObject({ contextWindow: 400_000, known: true });
    expect(modelLimits('gpt-4o-mini').contextWindow).toBe(128_000);
    expect(modelLimits('workmem-test')).toMatchObject({ contextWindow: UNKNOWN_MODEL_WINDOW, known: false });
    // The output reserve: at most 4096, at most a quarter of the window.
    expect(modelLimits('claude-haiku-4-5').maxOutputTokens).toBe(4096);
  });
});
