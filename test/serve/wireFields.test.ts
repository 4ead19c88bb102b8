/**
 * The wire as the client sent it, both ways, streamed and not, through a session whose answer
 * took more than one upstream call (the model wrote its memory first): the logprobs of the
 * text the client got, the upstream's system fingerprint, every usage detail summed over the
 * calls, a message's `name`, and `developer` messages sent as developer messages.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { client, proxies } from './proxyHarness.js';

const proxied = proxies();

/** The usage the upstream reported for its last `n` calls, summed field by field. */
function summedUsage(reported: Record<string, unknown>[]): Record<string, unknown> {
  const sum = (a: unknown, b: unknown): unknown => {
    if (typeof a === 'number' && typeof b === 'number') return a + b;
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
      for (const [k, v] of Object.entries(b)) out[k] = k in out ? sum(out[k], v) : v;
      return out;
    }
    return b;
  };
  return reported.reduce((a, b) => sum(a, b) as Record<string, unknown>);
}

describe('the wire as the client sent it', () => {
  for (const stream of [false, true]) {
    it(`passes on logprobs, the system fingerprint and every usage detail summed (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, server } = await proxied({ server: { usageDetails: true, promptCaching: 'automatic' } });
      const openai = client(proxy, { 'x-workmem-session': `fields-${stream}` });
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'My plant1 is rose1.' }];
      const before = server.requests.length;
      let content = '';
      let logprobs: { token: string }[] = [];
      let fingerprint: string | null | undefined;
      let usage: Record<string, unknown> | null | undefined;
      if (stream) {
        const chunks = await openai.chat.completions.create({
          model: 'workmem-test',
          messages,
          logprobs: true,
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const chunk of chunks) {
          fingerprint ??= chunk.system_fingerprint;
          content += chunk.choices[0]?.delta.content ?? '';
          logprobs.push(...((chunk.choices[0]?.logprobs?.content ?? []) as { token: string }[]));
          if (chunk.usage) usage = chunk.usage as unknown as Record<string, unknown>;
        }
      } else {
        const completion = await openai.chat.completions.create({ model: 'workmem-test', messages, logprobs: true });
        content = completion.choices[0]!.message.content ?? '';
        logprobs = (completion.choices[0]!.logprobs?.content ?? []) as { token: string }[];
        fingerprint = completion.system_fingerprint;
        usage = completion.usage as unknown as Record<string, unknown>;
      }
      const calls = server.requests.slice(before);
      // The model wrote its memory, then answered: two upstream calls, both asked for logprobs.
      expect(calls.length).toBe(2);
      for (const call of calls) expect(call.body.logprobs).toBe(true);
      expect(content).toContain('rose1');
      expect(logprobs.map((l) => l.token).join('')).toBe(content);
      expect(fingerprint).toBe('fp_workmem');
      const expected = summedUsage(calls.map((c) => c.usage!));
      expect(usage).toEqual({ ...expected, total_tokens: (expected.prompt_tokens as number) + (expected.completion_tokens as number) });
      expect((usage!.completion_tokens_details as { reasoning_tokens: number }).reasoning_tokens).toBeGreaterThan(0);
    });
  }

  it("keeps a message's name and sends developer messages as developer messages, workmem's part after them", async () => {
    const { proxy, server } = await proxied();
    for (const instructions of [
      [{ role: 'developer' as const, content: 'Answer in English.' }],
      [
        { role: 'system' as const, content: 'You help with a garden.' },
        { role: 'developer' as const, content: 'Answer in English.', name: 'ops' },
      ],
    ]) {
      const openai = client(proxy, { 'x-workmem-session': `roles-${instructions.length}` });
      const messages: ChatCompletionMessageParam[] = [...instructions, { role: 'user', content: 'My plant1 is rose1.', name: 'ann' }];
      await openai.chat.completions.create({ model: 'workmem-test', messages });
      const sent = server.requests.at(-1)!.body.messages as { role: string; content: string; name?: string }[];
      // The client's instruction messages in their roles and order; workmem's part (the memory) after the last.
      expect(sent.slice(0, instructions.length).map((m) => m.role)).toEqual(instructions.map((m) => m.role));
      instructions.forEach((m, i) => expect(sent[i]!.content.startsWith(m.content)).toBe(true));
      expect(sent[instructions.length - 1]!.content).toContain('<working_memory');
      if (instructions.length === 2) {
        expect(sent[0]!.content).toBe('You help with a garden.');
        expect(sent[1]!.name).toBe('ops');
      }
      expect(sent.find((m) => m.role === 'user' && m.content.startsWith('My plant1'))?.name).toBe('ann');
    }
  });

  it('passes a first request through as it came: its fields, its roles, its names', async () => {
    const { proxy, server } = await proxied({ server: { usageDetails: true } });
    const messages: ChatCompletionMessageParam[] = [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: 'Hello.', name: 'ann' },
    ];
    const completion = await client(proxy).chat.completions.create({ model: 'workmem-test', messages, logprobs: true, temperature: 0.3 });
    const body = server.requests.at(-1)!.body;
    expect(body.messages).toEqual(messages);
    expect(body.temperature).toBe(0.3);
    expect(completion.choices[0]!.logprobs?.content?.length).toBeGreaterThan(0);
    expect(completion.usage).toEqual(server.requests.at(-1)!.usage);
  });
});
