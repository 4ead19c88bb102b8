/**
 * Secrets in streamed text and in the base URL: a key streamed a few characters per
 * delta is masked in the message_delta events and in `workmem run`'s output (a window
 * holds back what could still be the start of a secret); a password in the base URL's
 * userinfo reaches no event, trace or error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { REDACTED, redactor, streamRedactor } from '../../src/secrets/redact.js';
import type { Policy } from '../../src/testing/wire.js';
import { runCli } from '../cli/cliProcess.js';
import { collect, newSession, ofType, tempHome, testServers } from '../helpers.js';

const KEY = 'sk-proj-Zq8WmT3vXr5LpN2cYb7K';
/** A secret the host configured that has no key shape at all. */
const HOST_SECRET = 'correct horse battery staple';

const serve = testServers();

/** A model that repeats the secrets it was given, a few characters per delta. */
const leaky = (): Policy => () => ({ content: `The key is ${KEY} and the phrase is "${HOST_SECRET}". Twice: ${KEY}${KEY}.` });

describe('the stream window', () => {
  it('masks a secret however it is split, and passes ordinary text through unchanged and in order', () => {
    const redact = redactor([KEY, HOST_SECRET]);
    const text = `a ${KEY} b ${HOST_SECRET}${KEY} c sk-other1234567890abcdef d http://bob:pa55word@host/v1 e`;
    for (const size of [1, 2, 3, 5, 13]) {
      const window = streamRedactor(redact);
      let shown = '';
      for (let i = 0; i < text.length; i += size) shown += window.push(text.slice(i, i + size));
      shown += window.flush();
      expect(shown).toBe(redact(text));
      expect(shown).not.toContain(KEY.slice(8));
      expect(shown).not.toContain('battery');
      expect(shown).not.toContain('1234567890abcdef');
      expect(shown).not.toContain('pa55word');
    }
    const plain = 'Ordinary text, with skills and URLs like https://example.com/a — nothing to hide.';
    const window = streamRedactor(redact);
    const pieces = Array.from({ length: Math.ceil(plain.length / 3) }, (_, i) => window.push(plain.slice(i * 3, i * 3 + 3)));
    pieces.push(window.flush());
    expect(pieces.join('')).toBe(plain);
    // Held back by no more than the longest secret minus one (plus a growing URL).
    expect(pieces.slice(0, -1).join('').length).toBeGreaterThan(0);
  });
});

describe('streamed secrets through the real client', () => {
  for (const chunkChars of [2, 3]) {
    it(`a key streamed ${chunkChars} characters per delta is never rebuilt from message_delta events`, async () => {
      const server = await serve(leaky(), { chunkChars });
      const llm = openaiChat({ baseURL: server.baseURL, model: 'workmem-test', apiKey: KEY, env: {} });
      const session = await newSession({ llm, secrets: [HOST_SECRET] });
      const events = collect(session);
      const result = await session.prompt('tell me the key');
      expect(result.status).toBe('done');
      const deltas = ofType(events, 'message_delta').map((e) => e.delta);
      expect(deltas.length).toBeGreaterThan(5);
      const streamed = deltas.join('');
      expect(streamed).not.toContain(KEY);
      expect(streamed).not.toContain(KEY.slice(12));
      expect(streamed).not.toContain(HOST_SECRET);
      expect(streamed).toBe(`The key is ${REDACTED} and the phrase is "${REDACTED}". Twice: ${REDACTED}${REDACTED}.`);
      expect(result.text).toBe(streamed);
      await session.close();
    });
  }

  it('ordinary text streams unchanged and in order', async () => {
    const text = 'Streaming, in order: one two three — 四五六 — sk is not a key, s k neither. The end.';
    const server = await serve(() => ({ content: text }), { chunkChars: 2 });
    const session = await newSession({ llm: openaiChat({ baseURL: server.baseURL, model: 'workmem-test', apiKey: KEY, env: {} }) });
    const events = collect(session);
    await session.prompt('q');
    const deltas = ofType(events, 'message_delta').map((e) => e.delta);
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.join('')).toBe(text);
    await session.close();
  });

  it('on abort, what was held back is flushed (masked), and matches what was kept', async () => {
    const server = await serve(() => ({ content: `start ${KEY} and then a long tail `.repeat(20) }), { chunkChars: 3, chunkDelayMs: 5 });
    const session = await newSession({ llm: openaiChat({ baseURL: server.baseURL, model: 'workmem-test', apiKey: KEY, env: {} }) });
    const events = collect(session);
    session.on('message_delta', () => {
      if (ofType(events, 'message_delta').length === 25) session.abort();
    });
    const result = await session.prompt('q');
    expect(result.status).toBe('aborted');
    const streamed = ofType(events, 'message_delta')
      .map((e) => e.delta)
      .join('');
    const kept = ofType(events, 'message_end').find((e) => e.stop === 'aborted')!.message.content;
    expect(streamed).toBe(kept);
    expect(streamed).not.toContain(KEY);
    await session.close();
  });

  it('workmem run prints no key streamed in pieces', async () => {
    const server = await serve(leaky(), { chunkChars: 3 });
    const home = tempHome();
    const result = await runCli(['run', 'tell me the key'], {
      env: { WORKMEM_HOME: home, OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: KEY, WORKMEM_MODEL: 'workmem-test' },
      cwd: home,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(REDACTED);
    expect(`${result.stdout}${result.stderr}`).not.toContain(KEY.slice(8));
  });
});

describe('userinfo in the base URL', () => {
  it('is masked as *** in errors, retry events and trace.jsonl, and in the URL the client reports', async () => {
    const server = await serve(() => ({ content: 'never reached' }));
    const password = 'hunter2-but-longer';
    const baseURL = server.baseURL.replace('http://', `http://alice:${password}@`);
    const llm = openaiChat({ baseURL, model: 'workmem-test', env: {} });
    expect(llm.baseURL).toBe(server.baseURL.replace('http://', 'http://***@'));
    expect(llm.secrets).toContain(password);
    const session = await newSession({ llm, settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } } });
    const events = collect(session);
    const result = await session.prompt('q');
    expect(result.status).toBe('failed');
    const retries = ofType(events, 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]!.error.message).toContain('http://***@127.0.0.1');
    await session.close();
    const everything = [JSON.stringify(events), JSON.stringify(result), readFileSync(join(session.dir, 'trace.jsonl'), 'utf8')].join('\n');
    expect(everything).not.toContain(password);
    expect(everything).not.toContain('alice:');
  });

  it('a short password is still masked in any URL', () => {
    const redact = redactor([]);
    expect(redact('failed: http://bob:pw@10.0.0.1:8000/v1/chat')).toBe('failed: http://***@10.0.0.1:8000/v1/chat');
    expect(redact('mail bob@example.com, see https://example.com/a@b')).toBe('mail bob@example.com, see https://example.com/a@b');
  });
});
