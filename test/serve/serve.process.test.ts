/**
 * `workmem serve` from the built CLI: its help, its usage errors (exit 2), and a proxy that
 * starts on the port it prints, serves the `openai` client, and stops on SIGTERM (exit 0).
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/cliProcess.js';
import { protocolFollower, startTestServer } from '../../src/testing/index.js';
import { tempHome } from '../helpers.js';
import { client } from './proxyHarness.js';
import { serveProcesses } from './serveProcess.js';
import { post } from './sseEvents.js';

const serve = serveProcesses();

describe('workmem serve, the command', () => {
  it('says how it is used, and refuses what it cannot do with exit code 2', async () => {
    const help = await runCli(['serve', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--upstream <base-url>');
    expect(help.stdout).toContain('x-workmem-session');
    const main = await runCli(['--help']);
    expect(main.stdout).toMatch(/serve\s+a working-memory proxy/);
    const none = await runCli(['serve'], { env: { WORKMEM_HOME: tempHome() } });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--upstream');
    const short = await runCli(['serve', '--upstream', 'http://127.0.0.1:9/v1'], {
      env: { WORKMEM_HOME: tempHome(), WORKMEM_SERVE_TOKEN: 'short' },
    });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('token');
    const bad = await runCli(['serve', '--upstream', 'ftp://x'], { env: { WORKMEM_HOME: tempHome() } });
    expect(bad.code).toBe(2);
    const badMessages = await runCli(['serve', '--upstream-messages', 'ftp://x'], { env: { WORKMEM_HOME: tempHome() } });
    expect(badMessages.code).toBe(2);
    expect(badMessages.stderr).toContain('--upstream-messages');
  });

  it("serves an Anthropic client from its own upstream, with the proxy's ANTHROPIC_API_KEY", async () => {
    const server = await startTestServer({ policy: protocolFollower({ seed: 1 }), apiKey: 'sk-ant-proxyKeyOfTheProxy0123456789' });
    try {
      const proxy = await serve(['--upstream-messages', server.baseURL], {
        WORKMEM_HOME: tempHome(),
        ANTHROPIC_API_KEY: 'sk-ant-proxyKeyOfTheProxy0123456789',
      });
      const reply = await post(
        `${proxy.url}/messages`,
        { model: 'workmem-test', max_tokens: 100, messages: [{ role: 'user', content: 'My plant1 is rose1.' }] },
        { 'x-api-key': proxy.token },
      );
      expect(reply.status).toBe(200);
      expect(JSON.stringify(reply.json.content)).toContain('rose1');
      expect(proxy.output()).toContain(`ANTHROPIC_BASE_URL=${proxy.url.replace(/\/v1$/, '')} ANTHROPIC_API_KEY=${proxy.token}`);
      // Only the Messages API has an upstream: the others say so.
      const chat = await post(
        `${proxy.url}/chat/completions`,
        { model: 'workmem-test', messages: [{ role: 'user', content: 'hi' }] },
        { authorization: `Bearer ${proxy.token}` },
      );
      expect(chat.status).toBe(404);
      expect(await proxy.stop()).toBe(0);
      expect(proxy.output()).not.toContain('sk-ant-proxyKey');
    } finally {
      await server.close();
    }
  });

  it('serves a client on the port it prints and stops cleanly', async () => {
    const server = await startTestServer({ policy: protocolFollower({ seed: 1 }) });
    try {
      const proxy = await serve(['--upstream', server.baseURL], {
        WORKMEM_HOME: tempHome(),
        OPENAI_API_KEY: 'sk-proxyKeyOfTheProxyItself01234567',
      });
      const openai = client(proxy);
      const completion = await openai.chat.completions.create({
        model: 'workmem-test',
        messages: [{ role: 'user', content: 'My plant1 is rose1.' }],
      });
      expect(completion.choices[0]!.message.content).toContain('rose1');
      expect(server.requests.at(-1)!.headers.authorization).toBe('Bearer [redacted]');
      expect(proxy.output()).toContain(`OPENAI_BASE_URL=${proxy.url}`);
      // One line for the request on stderr (a first request: passed through), and none of its text.
      while (!proxy.output().includes('POST /v1/chat/completions 200')) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(proxy.output()).toMatch(/workmem serve: POST \/v1\/chat\/completions 200 session=- how=first calls=1 in=\d+/);
      expect(proxy.output()).not.toContain('plant1');
      // Its port taken, another says so in its words (exit 2).
      const port = new URL(proxy.url).port;
      const taken = await runCli(['serve', '--upstream', server.baseURL, '--port', port], { env: { WORKMEM_HOME: tempHome() } });
      expect(taken.code).toBe(2);
      expect(taken.stderr).toContain(`port ${port} on 127.0.0.1 is in use`);
      expect(await proxy.stop()).toBe(0);
      expect(proxy.output()).not.toContain('sk-proxyKey');
    } finally {
      await server.close();
    }
  });
});
