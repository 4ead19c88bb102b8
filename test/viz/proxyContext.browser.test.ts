/// <reference lib="dom" />
/**
 * The context view of a proxied session, in headless Chromium: request by request, what the
 * client sent (its instructions and messages, workmem's own tool exchanges marked as folded)
 * beside what went upstream (the system prompt with the memory, the history, the tail).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { startVizServer, type VizServer } from '../../src/viz/vizServer.js';
import { agentTurn, client, proxies } from '../serve/proxyHarness.js';
import { launchChromium } from './vizProbes.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');
const proxied = proxies();
let browser: Browser;
const vizServers: VizServer[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all(vizServers.map((s) => s.close()));
});

describe('the context view of a proxied session', () => {
  it("shows what the client sent beside what went upstream, request by request, workmem's tools marked as folded", async () => {
    const { proxy, home } = await proxied();
    const openai = client(proxy, { 'x-workmem-session': 'seen' });
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You help with a garden.' }];
    for (const text of ['My plant1 is rose1.', 'Use the weather tool with city1.', 'What is my plant1?'])
      await agentTurn(openai, messages, text);

    const viz = await startVizServer({ home, port: 0 });
    vizServers.push(viz);
    const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    await page.goto(`${viz.url}/?session=${sessionIdFor('seen')}#token=${viz.token}`);
    await page.waitForSelector('#chart svg');
    await page.waitForFunction(() => document.querySelector('#position')?.textContent !== '0 / 0');
    await page.focus('body');
    await page.keyboard.press('End');
    await page.waitForSelector('#context [data-side="client"]');

    const read = () =>
      page.evaluate(() => {
        const side = (name: string) => document.querySelector(`#context [data-side="${name}"]`);
        const parts = (name: string) =>
          Array.from(side(name)?.querySelectorAll<HTMLElement>('.part') ?? []).map((p) => ({
            role: p.dataset.role,
            workmem: p.classList.contains('workmem'),
            text: p.querySelector('pre.body')?.textContent ?? '',
          }));
        return { title: side('client')?.querySelector('h3')?.textContent ?? '', client: parts('client'), upstream: parts('upstream') };
      });
    const last = await read();
    // The client's side: its instructions and every message of its conversation, as it sent them.
    expect(last.title).toBe(`Client sent · ${messages.length - 1} messages`);
    expect(last.client[0]).toMatchObject({ role: 'system', text: 'You help with a garden.' });
    const clientTexts = last.client.map((p) => p.text);
    for (const text of ['My plant1 is rose1.', 'Use the weather tool with city1.', 'What is my plant1?'])
      expect(clientTexts).toContain(text);
    // workmem's memory write is in the log, folded into the answer the client holds: marked, not the client's own.
    expect(last.client.filter((p) => p.workmem).length).toBeGreaterThan(0);
    // The upstream side: the system prompt with the working memory, and the tail the client never sees.
    expect(last.upstream.some((p) => p.text.includes('<working_memory'))).toBe(true);
    expect(last.upstream.some((p) => p.role === 'tail' && p.text.includes('<context_meta>'))).toBe(true);
    expect(last.client.some((p) => p.text.includes('<context_meta>'))).toBe(false);

    // Request by request: the first request shows the client's first message only.
    await page.keyboard.press('Home');
    await page.keyboard.press(']');
    await page.waitForFunction(() => document.querySelector('#context')?.getAttribute('data-request') === '0');
    const first = await read();
    expect(first.client.filter((p) => p.role === 'user').map((p) => p.text)).toEqual(['My plant1 is rose1.']);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-proxy-context.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
