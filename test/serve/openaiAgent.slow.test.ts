/**
 * The `openai` npm client running a 40-turn agent with two tools of its own through
 * `workmem serve` to the test server (a protocol-following stand-in model): facts stated
 * early are answered late, the memory is written by the model through the proxy (the
 * client never sees those calls), phase 2 is reached, and the client's own tool calls
 * round-trip, streamed and not.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { agentTurn, client, proxies, sessionState } from './proxyHarness.js';

const proxied = proxies();

function prompts(): string[] {
  const out: string[] = [];
  for (let i = 1; i <= 10; i++) out.push(`My plant${i} is rose${i}.`);
  for (let i = 1; i <= 4; i++) out.push(`Use the weather tool with city${i}.`);
  for (let i = 1; i <= 4; i++) out.push(`Use the lookup tool with word${i}.`);
  for (let i = 1; i <= 12; i++) out.push(`Small talk number ${i}: ${'the weather is mild, '.repeat(10)}`);
  for (let i = 1; i <= 10; i++) out.push(`What is my plant${i}?`);
  return out;
}

describe('the openai client through workmem serve', () => {
  for (const stream of [false, true])
    it(`runs a 40-turn agent with two tools of its own (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, server, home } = await proxied({ proxy: { contextWindow: 6000 } });
      const openai = client(proxy, { 'x-workmem-session': `agent-${stream}` });
      const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You help with a garden.' }];
      const calls: string[] = [];
      const answers: string[] = [];
      for (const text of prompts()) answers.push(await agentTurn(openai, messages, text, { stream, calls }));

      expect(prompts().length).toBe(40);
      // The client's own calls round-trip; workmem's never reach it.
      expect(calls.filter((c) => c === 'weather').length).toBe(4);
      expect(calls.filter((c) => c === 'lookup').length).toBe(4);
      expect(calls.some((c) => WORKMEM_TOOL_NAMES.has(c))).toBe(false);
      for (const m of messages)
        if (m.role === 'assistant')
          for (const c of m.tool_calls ?? [])
            expect(WORKMEM_TOOL_NAMES.has((c as { function: { name: string } }).function.name)).toBe(false);
      // Facts early, asked late: answered.
      const late = answers.slice(-10);
      expect(late.filter((a, i) => a.includes(`rose${i + 1}`)).length, late.join(' | ')).toBeGreaterThanOrEqual(9);

      const state = await sessionState(sessionIdFor(`agent-${stream}`), { home });
      // The model wrote its memory (through the proxy's tools), and the session reached phase 2.
      expect(state.overview).toContain('rose1');
      expect(state.meta?.historyMode).toBe('phase2');
      const written = state.log.filter(
        (e) => e.type === 'message' && e.message.role === 'assistant' && e.message.tool_calls?.some((c) => c.function.name === 'write'),
      );
      expect(written.length).toBeGreaterThan(0);
      // The upstream saw workmem's requests: the memory in the system message, the tail, workmem's tools beside the client's.
      const last = server.requests.at(-1)!.body;
      expect(last.messages[0]!.content).toContain('<working_memory');
      expect(last.tools!.map((t) => t.function.name)).toEqual(expect.arrayContaining(['write', 'weather', 'lookup']));
      expect(String(last.messages.at(-1)!.content)).toContain('<context_meta>');
      // Nothing diverged: the log never branched, every message the client sent is in it once.
      expect(state.log.filter((e) => e.type === 'branch')).toEqual([]);
      const users = state.log.filter((e) => e.type === 'message' && e.message.role === 'user');
      expect(users.length).toBe(40);
    });
});
