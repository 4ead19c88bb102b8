/**
 * `workmem serve`'s upstreams by protocol: --upstream serves every protocol; --upstream-chat,
 * --upstream-responses and --upstream-messages name a protocol's own (an Anthropic client's
 * requests go to an Anthropic-compatible server). Each is an http:// or https:// base URL.
 */
import { withoutUserinfo } from '../llm/baseUrl.js';
import type { Flags } from './cliIO.js';
import { UsageError } from './usageError.js';

export const PROTOCOL_UPSTREAMS = { chat: 'upstream-chat', responses: 'upstream-responses', messages: 'upstream-messages' } as const;

export type ProtocolUpstreams = Partial<Record<keyof typeof PROTOCOL_UPSTREAMS, string>>;

export function protocolUpstreams(flags: Flags): ProtocolUpstreams {
  const out: ProtocolUpstreams = {};
  for (const [protocol, flag] of Object.entries(PROTOCOL_UPSTREAMS) as [keyof typeof PROTOCOL_UPSTREAMS, string][]) {
    const value = flags[flag];
    if (value === undefined) continue;
    const url = typeof value === 'string' ? value.trim() : '';
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {
      // refused below
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
      throw new UsageError(`--${flag} must be an http:// or https:// base URL, got ${JSON.stringify(withoutUserinfo(url))}`);
    out[protocol] = url;
  }
  return out;
}
