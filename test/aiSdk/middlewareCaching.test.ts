/**
 * The AI SDK middleware's session caches as the wrapped model's provider does: explicit for
 * Anthropic and Bedrock, automatic otherwise, or as `caching` says; a compaction model of
 * another provider changes neither what the session weighs nor the breakpoints it is sent.
 */
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { simulateReadableStream, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import type { ProviderCaching } from '../../src/settings/settings.js';
import { tempHome } from '../helpers.js';

/** A model of `provider` that answers "ok". */
function modelOf(provider: string, modelId: string): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    provider,
    modelId,
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'text-start' as const, id: 't' },
          { type: 'text-delta' as const, id: 't', delta: 'ok' },
          { type: 'text-end' as const, id: 't' },
          {
            type: 'finish' as const,
            finishReason: { unified: 'stop' as const, raw: 'stop' },
            usage: {
              inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: undefined },
              outputTokens: { total: 1, text: 1, reasoning: undefined },
            },
          },
        ],
      }),
    }),
  });
}

const where = () => ({ home: tempHome(), cwd: '/work/project', env: {} });

describe("the AI SDK middleware's caching", () => {
  it.each([
    { provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5', given: undefined, caching: 'explicit' },
    { provider: 'amazon-bedrock', modelId: 'anthropic.claude-sonnet-4-5', given: undefined, caching: 'explicit' },
    { provider: 'openai.chat', modelId: 'gpt-4o', given: undefined, caching: 'automatic' },
    { provider: 'openai.chat', modelId: 'gpt-4o', given: 'explicit', caching: 'explicit' },
    { provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5', given: 'automatic', caching: 'automatic' },
  ] as { provider: string; modelId: string; given?: ProviderCaching; caching: ProviderCaching }[])(
    "$provider with caching $given: the session's settings say $caching",
    async ({ provider, modelId, given, caching }) => {
      const workmem = await createWorkmem({ model: modelOf(provider, modelId), ...(given ? { caching: given } : {}), ...where() });
      expect(workmem.session.settings.caching).toBe(caching);
      await workmem.close();
    },
  );

  it("an Anthropic model with an OpenAI compaction model is explicit: the session's settings and the breakpoints it is sent", async () => {
    const model = modelOf('anthropic.messages', 'claude-sonnet-4-5');
    const workmem = await createWorkmem({ model, compactionModel: modelOf('openai.chat', 'gpt-4o-mini'), ...where() });
    expect(workmem.session.settings.caching).toBe('explicit');
    const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
    expect(await streamText({ model: wrapped, prompt: 'Hello.' }).text).toBe('ok');
    const prompt = (model.doStreamCalls.at(-1) as LanguageModelV3CallOptions).prompt;
    expect(prompt.some((m) => m.providerOptions?.anthropic)).toBe(true);
    await workmem.close();
  });
});
