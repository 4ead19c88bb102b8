/**
 * A proxied session stays open for the conversation's next request (keepOpenMs): the
 * next one finds it warm, not opened again from its log; after the window the lease is
 * given back, and with 0 it is given back at once.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HostLoop } from '../../src/session/hostLoop.js';
import { openSession } from '../../src/session/index.js';
import { SessionInUseError } from '../../src/storage/storeErrors.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { client, proxies } from './proxyHarness.js';

const proxied = proxies();
afterEach(() => void vi.restoreAllMocks());

const ask = (proxy: Parameters<typeof client>[0], text: string) =>
  client(proxy, { 'x-workmem-session': 'kept' }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] });

describe('a proxied session kept open', () => {
  it('serves the next request from the session still open, then gives the lease back', async () => {
    const { proxy, home } = await proxied({ proxy: { keepOpenMs: 400 } });
    const opened = vi.spyOn(HostLoop, 'open');
    await ask(proxy, 'My name is Ada.');
    await ask(proxy, 'What is my name?');
    await ask(proxy, 'And again?');
    expect(opened).toHaveBeenCalledTimes(1);
    // Held between the requests: another opener is refused while the window lasts…
    const llm = scriptedModel([]);
    await expect(openSession(sessionIdFor('kept'), { llm, home, env: {} })).rejects.toBeInstanceOf(SessionInUseError);
    // …and gets it once the window has passed.
    await new Promise((resolve) => setTimeout(resolve, 700));
    const again = await openSession(sessionIdFor('kept'), { llm, home, env: {} });
    await again.close();
  });

  it('with keepOpenMs 0 gives the lease back with every answer', async () => {
    const { proxy, home } = await proxied({ proxy: { keepOpenMs: 0 } });
    const opened = vi.spyOn(HostLoop, 'open');
    await ask(proxy, 'My name is Ada.');
    await ask(proxy, 'What is my name?');
    expect(opened).toHaveBeenCalledTimes(2);
    const again = await openSession(sessionIdFor('kept'), { llm: scriptedModel([]), home, env: {} });
    await again.close();
  });
});
