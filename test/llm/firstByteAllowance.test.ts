/**
 * The wait for a response's first output follows the prompt's size (a model on a CPU reads
 * the whole prompt before it sends anything), apart from the stall allowed between chunks;
 * a first-output timeout that the prompt's size explains is not retried. Through the real
 * openai client against the local test server, and aiSdkModel over the AI SDK's mock model.
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModel } from '../../src/aiSdk/index.js';
import { openaiChat, type OpenAIChatOptions } from '../../src/llm/openaiChat.js';
import { firstByteAllowance, isLocalURL, msPerPromptTokenForProvider } from '../../src/llm/firstByteAllowance.js';
import type { LLMRequest } from '../../src/llm/llm.js';
import type { Fault, TestServer } from '../../src/testing/index.js';
import { collect, newSession, ofType, testServers } from '../helpers.js';

const served = testServers();
const serve = (faults: Fault[]): Promise<TestServer> => served(() => ({ content: 'Read it all.' }), { faults });
const llmFor = (server: TestServer, options: OpenAIChatOptions) =>
  openaiChat({ baseURL: server.baseURL, model: 'workmem-test', contextWindow: 32_000, maxOutputTokens: 200, env: {}, ...options });

describe('the wait for the first output', () => {
  it('round 3 #16: a server silent while it reads the prompt is waited for in proportion to the prompt, not the stall allowance', async () => {
    // Nothing for 600 ms (no headers), and headers then nothing for 600 ms (a role chunk, then the prompt read):
    // both within 150 ms + 2 ms × the prompt's ~1,200 tokens, both past the 150 ms stall allowance.
    const faults: Fault[] = [
      { type: 'latency', ms: 600 },
      { type: 'stall', afterChunks: 1, ms: 600 },
    ];
    for (const fault of faults) {
      const server = await serve([fault]);
      const llm = llmFor(server, { timeoutMs: 150, firstByteTimeoutMs: 150, firstByteMsPerPromptToken: 2 });
      const session = await newSession({ llm, settings: { retry: { maxRetries: 0 } } });
      const events = collect(session);
      const result = await session.prompt('A question the model must read first.');
      expect(result, fault.type).toMatchObject({ status: 'done', text: 'Read it all.' });
      expect(ofType(events, 'prompt_built')[0]!.tokens.total).toBeGreaterThan(300);
      await session.close();
    }
  });

  it('round 3 #16: a first-output timeout of a prompt too long for the server is not retried, and says what it waited for', async () => {
    const server = await serve([{ type: 'latency', ms: 3_000 }]);
    // 100 ms + 1 ms × ~1,200 tokens: the prompt's share is most of the wait.
    const llm = llmFor(server, { timeoutMs: 100, firstByteTimeoutMs: 100, firstByteMsPerPromptToken: 1 });
    const session = await newSession({ llm, settings: { retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1 } } });
    const events = collect(session);
    const result = await session.prompt('A question the model cannot read in time.');
    const tokens = ofType(events, 'prompt_built')[0]!.tokens.total;
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'timeout', retryable: false } });
    expect(result.error!.message).toContain(`for a prompt of ${tokens.toLocaleString('en-US')} tokens (100 ms + 1 ms a prompt token)`);
    expect(result.error!.message).toMatch(/^no output from the server within [\d.]+ m?s, .*it was not retried.*firstByteMsPerPromptToken/);
    expect(ofType(events, 'retry')).toHaveLength(0);
    expect(server.requests).toHaveLength(1);
    await session.close();
  });

  it('a first-output timeout of a short prompt (the base wait) is retried as any timeout', async () => {
    const server = await serve([{ type: 'latency', ms: 2_000 }]);
    const llm = llmFor(server, { timeoutMs: 150, firstByteTimeoutMs: 150, firstByteMsPerPromptToken: 0.01 });
    const session = await newSession({ llm, settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } } });
    const events = collect(session);
    expect(await session.prompt('hello')).toMatchObject({ status: 'done', text: 'Read it all.' });
    expect(ofType(events, 'retry')[0]).toMatchObject({ error: { kind: 'timeout', retryable: true } });
    await session.close();
  });

  it('round 3 #16: aiSdkModel waits for the first part in proportion to the prompt; a timeout the prompt explains is not retried', async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'text-delta', id: 't', delta: 'Read it all.' },
      {
        type: 'finish',
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 1, text: 1, reasoning: undefined },
        },
      },
    ];
    // The stream opens at once, its output comes after 300 ms: within 50 ms + 1,000 tokens × 0.5 ms, past the 50 ms stall allowance.
    const slow = () =>
      new MockLanguageModelV3({
        doStream: async () => ({
          stream: new ReadableStream<LanguageModelV3StreamPart>({
            start: async (controller) => {
              controller.enqueue(parts[0]!);
              await sleep(300);
              for (const part of parts.slice(1)) controller.enqueue(part);
              controller.close();
            },
          }),
        }),
      });
    const request: LLMRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [], maxOutputTokens: 100, promptTokens: 1_000 };
    const call = { signal: new AbortController().signal, onText: () => {} };
    const options = { timeoutMs: 50, firstByteTimeoutMs: 50, firstByteMsPerPromptToken: 0.5 };
    const response = await aiSdkModel(slow(), options).complete(request, call);
    expect(response.message.content).toBe('Read it all.');
    const error = await aiSdkModel(slow(), { ...options, firstByteMsPerPromptToken: 0.1 })
      .complete(request, call)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'timeout', retryable: false });
    expect((error as Error).message).toMatch(
      /^no output from the server within 150 ms.*prompt of 1,000 tokens \(50 ms \+ 0\.1 ms a prompt token\)/,
    );
  });

  it('defaults: a local server may be a CPU, a hosted one reads fast; the prompt is estimated when not counted', () => {
    for (const url of [
      'http://127.0.0.1:8080/v1',
      'http://localhost:11434/v1',
      'http://[::1]:8000/v1',
      'http://192.168.1.20/v1',
      'http://ollama:11434/v1',
      'http://box.local/v1',
    ])
      expect(isLocalURL(url), url).toBe(true);
    for (const url of ['https://api.openai.com/v1', 'https://openrouter.ai/api/v1', 'http://8.8.8.8/v1', 'not a url'])
      expect(isLocalURL(url), url).toBe(false);
    expect(msPerPromptTokenForProvider('anthropic.messages')).toBe(1);
    expect(msPerPromptTokenForProvider('ollama.chat')).toBe(50);
    const request: LLMRequest = { messages: [{ role: 'user', content: 'x'.repeat(4_000) }], tools: [], maxOutputTokens: 10 };
    const estimated = firstByteAllowance({ baseMs: 1_000, msPerPromptToken: 10 }, request);
    expect(estimated.promptTokens).toBeGreaterThan(1_000);
    expect(estimated.promptTokens).toBeLessThan(1_100);
    expect(firstByteAllowance({ baseMs: 1_000, msPerPromptToken: 10 }, { ...request, promptTokens: 50 }).ms).toBe(1_500);
  });
});
