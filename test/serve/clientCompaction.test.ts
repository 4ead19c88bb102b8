/**
 * A client that compacts its own history mid-session (it replaces its early messages by a
 * summary and keeps its last exchanges, as agents do near their window): the proxy follows
 * it (a branch the log records), compacts nothing the client already compacted, and the
 * log loses nothing the client ever sent. Phase 1 is pinned, so that workmem compacts the history
 * too before the client does.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { BranchEntry, CompactionEntry } from '../../src/storage/messageLog.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { agentTurn, client, proxies, sessionState } from './proxyHarness.js';

const proxied = proxies();

describe('a client that compacts its own history', () => {
  it('is followed: one branch, nothing compacted twice, every message it sent kept in the log', async () => {
    const { proxy, server, home } = await proxied({ proxy: { contextWindow: 6000, settings: { historyMode: 'phase1' } } });
    const openai = client(proxy, { 'x-workmem-session': 'self-compacting' });
    let messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You help with a garden.' }];
    const sent: string[] = [];
    const turn = async (text: string) => {
      sent.push(text);
      return agentTurn(openai, messages, text, { stream: true });
    };
    for (let i = 1; i <= 6; i++) await turn(`My plant${i} is rose${i}.`);
    for (let i = 1; i <= 8; i++) await turn(`Small talk number ${i}: ${'the weather is mild, '.repeat(12)}`);
    // The client's own compaction: a summary instead of everything but the last two exchanges.
    const summary = `Summary of the conversation so far: the user named six plants (${Array.from({ length: 6 }, (_, i) => `plant${i + 1} is rose${i + 1}`).join(', ')}) and made small talk.`;
    sent.push(summary);
    messages = [messages[0]!, { role: 'user', content: summary }, { role: 'assistant', content: 'Understood.' }, ...messages.slice(-4)];
    const before = server.requests.length;
    for (let i = 1; i <= 6; i++) await turn(`My tree${i} is oak${i}.`);
    const late = [];
    for (let i = 1; i <= 6; i++) late.push(await turn(`What is my plant${i}?`));
    expect(late.filter((a, i) => a.includes(`rose${i + 1}`)).length, late.join(' | ')).toBeGreaterThanOrEqual(5);

    const { log } = await sessionState(sessionIdFor('self-compacting'), { home });
    const branches = log.filter((e): e is BranchEntry => e.type === 'branch');
    expect(branches.map((b) => b.reason)).toEqual(['compacted']);
    const branch = branches[0]!;
    // What the client compacted never went upstream again: its early messages are gone from every later request.
    for (const request of server.requests.slice(before)) {
      const carried = request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
      expect(carried).not.toContain('Small talk number 1:');
      expect(carried).not.toContain('My plant1 is rose1.');
    }
    // Nothing compacted twice: every compaction after the branch covers only messages recorded after it.
    const compactions = log.filter((e): e is CompactionEntry => e.type === 'compaction' && !!e.replaces);
    expect(compactions.filter((c) => c.seq < branch.seq).length, 'workmem compacted before the client did').toBeGreaterThan(0);
    for (const c of compactions.filter((c) => c.seq > branch.seq)) expect(c.replaces!.from).toBeGreaterThan(branch.seq);
    // Lose nothing: every message the client ever sent is in the log.
    const logged = new Set(log.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [e.message.content] : [])));
    for (const text of sent) expect(logged.has(text), text.slice(0, 40)).toBe(true);
  });
});
