/**
 * Each door of `workmem serve` opens its sessions caching as its upstream does: the Messages
 * door's requests carry cache_control breakpoints (Anthropic caches only up to them), so
 * 'explicit'; the Chat Completions and Responses doors send none, so 'automatic'. A session
 * kept open by one door is opened again by another.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HostLoop } from '../../src/session/hostLoop.js';
import type { ProviderCaching } from '../../src/settings/settings.js';
import { proxies } from './proxyHarness.js';
import { post } from './sseEvents.js';

const proxied = proxies();
afterEach(() => void vi.restoreAllMocks());

const question = [{ role: 'user', content: 'My plant1 is rose1.' }];
// The same model and output limit through every door: a kept session would serve them all but for the caching.
const DOORS: { name: string; path: string; body: Record<string, unknown>; caching: ProviderCaching }[] = [
  {
    name: 'Chat Completions',
    path: '/chat/completions',
    body: { model: 'workmem-test', max_tokens: 2000, messages: question },
    caching: 'automatic',
  },
  { name: 'Responses', path: '/responses', body: { model: 'workmem-test', input: question }, caching: 'automatic' },
  { name: 'Messages', path: '/messages', body: { model: 'workmem-test', max_tokens: 2000, messages: question }, caching: 'explicit' },
];

/** The sessions the proxy opened so far, in order. */
async function openedSessions(opened: { mock: { results: { value: unknown }[] } }) {
  return Promise.all(opened.mock.results.map(async (r) => (await (r.value as Promise<HostLoop>)).session));
}

describe("a serve door's caching", () => {
  it.each(DOORS)("the $name door's session caches $caching", async ({ path, body, caching }) => {
    const { proxy } = await proxied();
    const opened = vi.spyOn(HostLoop, 'open');
    const headers = { authorization: `Bearer ${proxy.token}`, 'x-workmem-session': 'cached' };
    const reply = await post(`${proxy.url}${path}`, body, headers);
    expect(reply.status, reply.text).toBe(200);
    const sessions = await openedSessions(opened);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.settings.caching).toBe(caching);
  });

  it('a session kept open by the Messages door is opened again for the Chat Completions door, with its caching', async () => {
    const { proxy } = await proxied({ proxy: { keepOpenMs: 60_000 } });
    const opened = vi.spyOn(HostLoop, 'open');
    const headers = { authorization: `Bearer ${proxy.token}`, 'x-workmem-session': 'both doors' };
    for (const door of [DOORS[2]!, DOORS[0]!]) {
      const reply = await post(`${proxy.url}${door.path}`, door.body, headers);
      expect(reply.status, reply.text).toBe(200);
    }
    const sessions = await openedSessions(opened);
    expect(sessions.map((s) => s.settings.caching)).toEqual(['explicit', 'automatic']);
    expect(new Set(sessions.map((s) => s.id)).size).toBe(1);
  });
});
