/**
 * Probes of the visualizer's doors, as an attacker sends them: raw HTTP requests with any
 * Host, Origin or path (a browser or a WebSocket client would normalise them first) and
 * WebSocket attempts. Shared by test/viz/visualizer.browser.test.ts and the viz reliability family.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM } from '../project/preflight.js';
import WebSocket from 'ws';
import { HANG_MS } from '../hangGuard.js';

export const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** One HTTP request with the headers given as they are (Host included), as a browser cannot send them. */
export function rawGet(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '', headers: res.headers });
    });
    req.on('error', () => resolve({ status: 0, body: '', headers: {} })); // reset: refused without a word
    req.end();
  });
}

/** A WebSocket attempt: did it open, what did the refusal say, what arrived in 300 ms. */
export function wsAttempt(
  url: string,
  options: { protocols?: string[]; headers?: Record<string, string>; send?: unknown[] } = {},
): Promise<{ opened: boolean; status: number | null; messages: string[] }> {
  return new Promise((resolve) => {
    const messages: string[] = [];
    let status: number | null = null;
    let opened = false;
    const ws = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
    ws.on('unexpected-response', (_req, res) => {
      status = res.statusCode ?? null;
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      opened = true;
      for (const m of options.send ?? []) ws.send(JSON.stringify(m));
      setTimeout(() => ws.close(), 300);
    });
    ws.on('message', (d) => messages.push(String(d)));
    ws.on('error', () => {});
    ws.on('close', () => resolve({ opened, status, messages }));
  });
}

export const until = async (check: () => boolean, ms = HANG_MS): Promise<void> => {
  for (const end = Date.now() + ms; !check();) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** The headers of a WebSocket upgrade, sent raw, with the token. */
export const upgradeHeaders = (token: string): Record<string, string> => ({
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'sec-websocket-protocol': `workmem, token.${token}`,
});

/**
 * Headless Chromium as the browser tests run it: the system's build, offline, no sandbox.
 * Its pages wait as long as the run's hang guard, not playwright's 30 s: a loaded machine is slow, not broken.
 */
export async function launchChromium(): Promise<Browser> {
  const browser = await launch();
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => {
    const context = await newContext(options);
    context.setDefaultTimeout(HANG_MS);
    return context;
  };
  const newPage = browser.newPage.bind(browser);
  browser.newPage = async (options) => {
    const page = await newPage(options);
    page.setDefaultTimeout(HANG_MS);
    return page;
  };
  return browser;
}

function launch(): Promise<Browser> {
  return chromium.launch({
    timeout: HANG_MS,
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
