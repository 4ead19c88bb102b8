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
