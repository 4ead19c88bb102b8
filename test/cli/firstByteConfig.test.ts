/**
 * config.json sets the wait for an answer's first output (firstByteTimeoutMs, a base, and
 * firstByteMsPerPromptToken, per prompt token) for every command's model client: a server
 * that reads the prompt for 600 ms is waited for when the per-token share allows it, and
 * times out, saying what it waited, when it does not. A bad value is refused, naming the setting.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/cli/config.js';
import { makeLLM } from '../../src/cli/runtime.js';
import { newSession, tempHome, testServers } from '../helpers.js';

const served = testServers();

function configured(values: Record<string, unknown>, baseURL: string) {
  const home = tempHome();
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, 'config.json'),
    JSON.stringify({ model: 'workmem-test', baseURL, apiKey: 'test', contextWindow: 32_000, maxOutputTokens: 200, ...values }),
  );
  return loadConfig({ home }, {});
}

describe("config.json's wait for the first output", () => {
  it('is what the model client waits: the per-token share lets a slow reader answer, with too small a share it times out, saying what it waited', async () => {
    const server = await served(() => ({ content: 'Read it all.' }), { faults: [{ type: 'latency', ms: 600 }] });
    const patient = makeLLM(configured({ timeoutMs: 150, firstByteTimeoutMs: 150, firstByteMsPerPromptToken: 2 }, server.baseURL));
    const session = await newSession({ llm: patient, settings: { retry: { maxRetries: 0 } } });
    expect(await session.prompt('A question the model must read first.')).toMatchObject({ status: 'done', text: 'Read it all.' });
    await session.close();

    const slow = await served(() => ({ content: 'Read it all.' }), { faults: [{ type: 'latency', ms: 3_000 }] });
    const hasty = makeLLM(configured({ timeoutMs: 150, firstByteTimeoutMs: 150, firstByteMsPerPromptToken: 0.1 }, slow.baseURL));
    const other = await newSession({ llm: hasty, settings: { retry: { maxRetries: 0 } } });
    const result = await other.prompt('A question the model cannot read in time.');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'timeout' } });
    expect(result.error!.message).toMatch(/150 ms \+ 0\.1 ms a prompt token/);
    await other.close();
  });

  it('refuses a negative allowance, naming the setting', () => {
    expect(() => configured({ firstByteMsPerPromptToken: -1 }, 'http://127.0.0.1:1/v1')).toThrow(/firstByteMsPerPromptToken/);
  });
});
