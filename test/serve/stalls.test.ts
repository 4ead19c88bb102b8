/**
 * An upstream that stalls after its headers — nothing at all, empty deltas, chunks with no
 * choice, `: ping` comments — is cut by the proxy's watchdog (its timeoutMs), streamed or not:
 * the client gets a timeout, the session is not held, and its next request is answered. Only
 * real output re-arms the watchdog: a reasoning model's thinking, however long, is answered.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../src/testing/index.js';
import { agentTurn, client, proxies } from './proxyHarness.js';

const proxied = proxies();
/** Far past the watchdog: a stall the proxy must cut. */
const LONG = 120_000;
const STALLS: [string, Fault][] = [
  ['headers, then nothing', { type: 'stall', afterChunks: 0, ms: LONG }],
  ['chunks with no choice', { type: 'keepalive', everyMs: 50 }],
  ['empty deltas', { type: 'keepalive', everyMs: 50, as: 'delta' }],
  [': ping comments', { type: 'keepalive', everyMs: 50, as: 'comment' }],
];

describe("the proxy's watchdog on its upstream", () => {
  for (const [what, fault] of STALLS)
    for (const stream of fault.type === 'stall' || (fault.type === 'keepalive' && fault.as === 'delta') ? [false, true] : [false])
      it(`cuts an upstream that sends ${what} (${stream ? 'streamed' : 'not streamed'}); the session's next request is answered`, async () => {
        const { proxy, server } = await proxied({ proxy: { timeoutMs: 1_500 } });
        const openai = client(proxy, { 'x-workmem-session': 'stalled' });
        const messages: ChatCompletionMessageParam[] = [];
        await agentTurn(openai, messages, 'Hello.');
        server.inject(fault);
        const failed = stream
          ? await (async () => {
              const chunks = await openai.chat.completions.create({
                model: 'workmem-test',
                messages: [...messages, { role: 'user', content: 'Again.' }],
                stream: true,
              });
              for await (const _ of chunks) void _;
              return null;
            })().catch((error: unknown) => error as { status?: number; message: string })
          : await openai.chat.completions
              .create({ model: 'workmem-test', messages: [...messages, { role: 'user', content: 'Again.' }] })
              .then(() => null)
              .catch((error: unknown) => error as { status?: number; message: string });
        expect(failed).not.toBeNull();
        expect(failed!.message).toMatch(/timed out|no output|no content/);
        if (!stream || fault.type === 'stall') expect(failed!.status).toBe(504);
        expect(await agentTurn(openai, messages, 'My plant1 is rose1.')).toContain('rose1');
      });

  it("takes a reasoning model's long thinking as output: answered, however long it thinks", async () => {
    const { proxy, server } = await proxied({ proxy: { timeoutMs: 1_500 } });
    const openai = client(proxy, { 'x-workmem-session': 'thinking' });
    const messages: ChatCompletionMessageParam[] = [];
    await agentTurn(openai, messages, 'Hello.');
    // 40 thoughts 100 ms apart: longer than the watchdog's 1.5 s in all, never that long silent.
    server.inject({ type: 'thinking', chunks: 40, everyMs: 100 });
    expect(await agentTurn(openai, messages, 'My plant1 is rose1.')).toContain('rose1');
  });
});
