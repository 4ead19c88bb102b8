/**
 * Small builders shared by the tests: temporary homes, sessions over the scripted
 * model, event collection, reading the log, and an independent token count of a
 * request (gpt-tokenizer's own whole-request formula, not our per-message sums).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { countChatCompletionTokens } from 'gpt-tokenizer/model/gpt-4o';
import { afterEach } from 'vitest';
import { fromPromise } from 'xstate';
import type { MemoryStoreInput } from '../machines/turnTypes.js';
import type { MemorySnapshot } from '../src/memory/memoryRules.js';
import { memoryHealth } from '../src/memory/memoryTemplate.js';
import type { WorkmemEvent } from '../src/events.js';
import type { LLMRequest } from '../src/llm/llm.js';
import type { LogEntry } from '../src/storage/messageLog.js';
import { tempHome } from './tempHomes.js';
import { createSession, type Session, type SessionOptions } from '../src/session/index.js';
import { protocolFollower, startTestServer, type Policy, type TestServer, type TestServerOptions } from '../src/testing/index.js';

/** `const serve = testServers();` in a file: local test servers, each closed after its test. */
export function testServers(): (policy: Policy, options?: Omit<TestServerOptions, 'policy'>) => Promise<TestServer> {
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return async (policy, options = {}) => {
    const server = await startTestServer({ policy, ...options });
    servers.push(server);
    return server;
  };
}

/** A protocol-following test server and the environment that points the CLI at it, in a fresh home. */
export async function cliServerEnv(): Promise<{ server: TestServer; env: NodeJS.ProcessEnv }> {
  const server = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
  return { server, env: { WORKMEM_HOME: tempHome(), OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test' } };
}

export { tempHome };

export async function newSession(options: Omit<SessionOptions, 'home'> & { home?: string }): Promise<Session> {
  return createSession({ cwd: '/work/project', env: {}, ...options, home: options.home ?? tempHome() });
}

export function collect(session: Session): WorkmemEvent[] {
  const events: WorkmemEvent[] = [];
  session.on('*', (e) => events.push(e));
  return events;
}

export function ofType<T extends WorkmemEvent['type']>(events: WorkmemEvent[], type: T): Extract<WorkmemEvent, { type: T }>[] {
  return events.filter((e): e is Extract<WorkmemEvent, { type: T }> => e.type === type);
}

export function logEntries(sessionDir: string): LogEntry[] {
  return readFileSync(join(sessionDir, 'messages.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as LogEntry);
}

/** The request's tokens by gpt-tokenizer's whole-request formula, tool definitions included. */
export function independentCount(request: LLMRequest): number {
  const messages = request.messages.map((m) => {
    if (m.role === 'assistant') {
      const call = m.tool_calls?.[0];
      if ((m.tool_calls?.length ?? 0) > 1) throw new Error('independentCount: one tool call per message');
      return {
        role: 'assistant',
        content: m.content ?? '',
        ...(call ? { function_call: { name: call.function.name, arguments: call.function.arguments } } : {}),
      };
    }
    return { role: m.role, content: m.content };
  });
  const functions = request.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  const count = countChatCompletionTokens as (request: unknown) => number;
  return count({ messages, ...(functions.length ? { functions } : {}) });
}

/** The last message of a request, split into its stored text and the ephemeral tail. */
export function splitTail(content: string): { body: string; meta: Record<string, number>; reminder: string | null } {
  const at = content.lastIndexOf('\n\n<context_meta>\n');
  if (at < 0) throw new Error('no <context_meta> in the last message');
  const tail = content.slice(at);
  const json = /<context_meta>\n(.*)\n<\/context_meta>/.exec(tail)![1]!;
  const reminder = /<memory_reminder[\s\S]*<\/memory_reminder>/.exec(tail)?.[0] ?? null;
  return { body: content.slice(0, at), meta: JSON.parse(json), reminder };
}

/** A turn machine's memoryStore actor that always loads this overview.md (version 1, no detail files). */
export function fixedMemoryStore(content: string) {
  return fromPromise<MemorySnapshot, MemoryStoreInput>(async () => ({
    version: 1,
    content,
    bytes: content.length,
    health: memoryHealth(content),
    detail: [],
  }));
}
