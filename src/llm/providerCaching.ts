/**
 * How a provider caches prompts, by its name, when its caller does not say: Anthropic (and
 * Claude on Bedrock) caches only up to the breakpoints a request marks, and bills what it
 * writes; the others cache every long enough prefix by themselves.
 */
import type { ProviderCaching } from '../settings/settings.js';

/** 'explicit' for Anthropic and Bedrock (`anthropic.messages`, `amazon_bedrock`, …), else 'automatic'. */
export function cachingOf(provider: string | undefined): ProviderCaching {
  return provider && /anthropic|bedrock/i.test(provider) ? 'explicit' : 'automatic';
}
