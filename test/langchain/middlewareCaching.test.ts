/**
 * The LangChain middleware's session caches as the agent's model's provider does, read from
 * its `ls_provider`: explicit for Anthropic and Bedrock, automatic otherwise, or as `caching` says.
 */
import { ChatOpenAI } from '@langchain/openai';
import { describe, expect, it } from 'vitest';
import { createWorkmem } from '../../src/langchain/workmemMiddleware.js';
import type { ProviderCaching } from '../../src/settings/settings.js';
import { tempHome } from '../helpers.js';

/** A chat model LangChain's tracing names as `provider`'s, as ChatAnthropic says 'anthropic'. */
function modelOf(provider: string): ChatOpenAI {
  const model = new ChatOpenAI({ model: 'claude-sonnet-4-5', apiKey: 'test', configuration: { baseURL: 'http://127.0.0.1:9/v1' } });
  const own = model.getLsParams.bind(model);
  model.getLsParams = (options) => ({ ...own(options), ls_provider: provider });
  return model;
}

describe("the LangChain middleware's caching", () => {
  it.each([
    { provider: 'anthropic', given: undefined, caching: 'explicit' },
    { provider: 'amazon_bedrock', given: undefined, caching: 'explicit' },
    { provider: 'openai', given: undefined, caching: 'automatic' },
    { provider: 'openai', given: 'explicit', caching: 'explicit' },
    { provider: 'anthropic', given: 'automatic', caching: 'automatic' },
  ] as { provider: string; given?: ProviderCaching; caching: ProviderCaching }[])(
    "ls_provider $provider with caching $given: the session's settings say $caching",
    async ({ provider, given, caching }) => {
      const model = modelOf(provider);
      expect(model.getLsParams({}).ls_provider).toBe(provider);
      const workmem = await createWorkmem({ model, ...(given ? { caching: given } : {}), home: tempHome(), cwd: '/work/project', env: {} });
      expect(workmem.session.settings.caching).toBe(caching);
      await workmem.close();
    },
  );

  it('ChatOpenAI as it comes is automatic', async () => {
    const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', configuration: { baseURL: 'http://127.0.0.1:9/v1' } });
    const workmem = await createWorkmem({ model, home: tempHome(), cwd: '/work/project', env: {} });
    expect(workmem.session.settings.caching).toBe('automatic');
    await workmem.close();
  });
});
