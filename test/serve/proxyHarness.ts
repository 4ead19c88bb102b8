/**
 * A proxy between a client and the test server, for the serve tests: the test server with a
 * policy (protocolFollower by default), `workmem serve` in process on it, and an agent loop
 * of the `openai` client with its own tools — what a program that cannot take a library does.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterEach } from 'vitest';
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/serve/proxyServer.js';
import { readSession } from '../../src/session/index.js';
import type { LogEntry } from '../../src/storage/messageLog.js';
import type { SessionStore } from '../../src/storage/sessionStore.js';
import { protocolFollower, startTestServer, type TestServer, type TestServerOptions } from '../../src/testing/index.js';
import { tempHome } from '../helpers.js';

export interface Proxied {
  server: TestServer;
  proxy: ProxyServer;
  home: string;
  store?: SessionStore;
}

/** `const proxied = proxies();` in a file: test servers and proxies, closed after each test. */
export function proxies(): (options?: {
  server?: Partial<TestServerOptions>;
  proxy?: Partial<ProxyOptions>;
  upstream?: TestServer;
}) => Promise<Proxied> {
  const open: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((close) => close()));
  });
  return async (options = {}) => {
    const server = options.upstream ?? (await startTestServer({ policy: protocolFollower({ seed: 5 }), ...options.server }));
    const home = options.proxy?.home ?? tempHome();
    const proxy = await startProxy({ upstream: server.baseURL, home, cwd: '/work/proxied', env: {}, ...options.proxy });
    open.push(() => proxy.close());
    if (!options.upstream) open.push(() => server.close());
    return { server, proxy, home, ...(options.proxy?.store ? { store: options.proxy.store } : {}) };
  };
}

/** A client of the proxy: its token as the API key, as an agent pointed at it is configured. */
export function client(proxy: Pick<ProxyServer, 'url' | 'token'>, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: proxy.url, apiKey: proxy.token, maxRetries: 0, defaultHeaders: headers });
}

export const clientTools: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Look a word up',
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
    },
  },
];

/** The client's own tools, run by the client. */
export function runClientTool(name: string, args: string): string {
  const { input } = JSON.parse(args) as { input: string };
  return name === 'weather' ? `Sunny in ${input}. ${'Long forecast text. '.repeat(30)}` : `${input}: a word.`;
}

/** One user turn of an agent loop: ask, run the client's tool calls, ask again, until an answer. */
export async function agentTurn(
  openai: OpenAI,
  messages: ChatCompletionMessageParam[],
  text: string,
  options: { stream?: boolean; model?: string; calls?: string[] } = {},
): Promise<string> {
  messages.push({ role: 'user', content: text });
  for (let i = 0; i < 10; i++) {
    const model = options.model ?? 'workmem-test';
    let message: { content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] };
    if (options.stream) {
      const stream = await openai.chat.completions.create({ model, messages, tools: clientTools, stream: true });
      let content = '';
      const calls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = [];
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta;
        if (delta?.content) content += delta.content;
        for (const c of delta?.tool_calls ?? []) {
          const call = (calls[c.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
          if (c.id) call.id = c.id;
          if (c.function?.name) call.function.name += c.function.name;
          if (c.function?.arguments) call.function.arguments += c.function.arguments;
        }
      }
      message = { content: content || null, ...(calls.length ? { tool_calls: calls } : {}) };
    } else {
      const completion = await openai.chat.completions.create({ model, messages, tools: clientTools });
      const m = completion.choices[0]!.message;
      message = { content: m.content, ...(m.tool_calls?.length ? { tool_calls: m.tool_calls as never } : {}) };
    }
    messages.push({ role: 'assistant', ...message });
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      options.calls?.push(call.function.name);
      messages.push({ role: 'tool', tool_call_id: call.id, content: runClientTool(call.function.name, call.function.arguments) });
    }
  }
  throw new Error('the agent loop did not end');
}

/** A session's log and working memory, read as any reader would (no lease). */
export async function sessionState(id: string, where: { home: string; store?: SessionStore }) {
  const reader = await readSession(id, where);
  const log = (await reader.readLog()).entries as LogEntry[];
  const meta = await reader.readMeta();
  const overview = await reader.memory.read('overview.md', { maxBytes: 1 << 20 }).catch(() => '');
  return { log, meta: meta.ok ? meta.meta : null, overview, trace: await reader.readTrace() };
}
