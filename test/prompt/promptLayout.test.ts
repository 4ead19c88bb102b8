import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { applyMemoryUpdate } from '../../src/prompt/memoryUpdate.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { defineTool } from '../../src/tools/tool.js';
import { collect, independentCount, logEntries, newSession, ofType, splitTail } from '../helpers.js';

const MEMORY = `# Working Memory

## Current task
Plan the garden.

## Known facts
- Soil is clay; the user prefers roses.
`;

describe('request layout (docs/design.md §4)', () => {
  it('system + memory + detail index → history → tail, with numbers that equal an independent count', async () => {
    const echo = defineTool({
      name: 'echo',
      description: 'Echo the text back',
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => `echo: ${text}`,
    });
    const llm = scriptedModel([
      { text: 'First answer.' },
      { toolCalls: [{ name: 'echo', arguments: { text: 'ping' } }] },
      { text: 'Second answer, after the tool.' },
      { text: 'Third answer.' },
    ]);
    const session = await newSession({ llm, tools: [echo], instructions: 'You are a gardening assistant.' });
    const events = collect(session);
    const wm = join(session.dir, 'working-memory');
    writeFileSync(join(wm, 'overview.md'), MEMORY);
    mkdirSync(join(wm, 'detail', 'plants'), { recursive: true });
    writeFileSync(join(wm, 'detail', 'plants', 'roses.md'), '# Rose varieties\n\nDavid Austin, climbing roses.\n');

    await session.prompt('Hello, garden.');
    await session.prompt('Use the echo tool.');
    await session.prompt('Thanks.');
    expect(llm.requests).toHaveLength(4);

    const stored = logEntries(session.dir).flatMap((e) => (e.type === 'message' ? [e.message] : []));
    for (const [i, request] of llm.requests.entries()) {
      const [system, ...rest] = request.messages;
      // 1. One system message: the stable prompt (host instructions first), then the memory and the detail index.
      expect(system!.role).toBe('system');
      const content = system!.content!;
      expect(content.startsWith('You are a gardening assistant.\n\n## Working memory')).toBe(true);
      const memoryAt = content.indexOf('<working_memory file="working-memory/overview.md">');
      const indexAt = content.indexOf('<detail_index>');
      expect(memoryAt).toBeGreaterThan(content.indexOf('## Context budget'));
      expect(content.slice(memoryAt)).toContain(MEMORY.trimEnd());
      expect(indexAt).toBeGreaterThan(memoryAt);
      expect(content.slice(indexAt)).toMatch(/- working-memory\/detail\/plants\/roses\.md \(\d+ B\): Rose varieties/);
      expect(content).not.toContain('<context_meta>\n{');

      // 2. Phase 1: the history is exactly the stored messages so far, in order.
      const body = rest.slice(0, -1);
      const last = rest.at(-1)!;
      const { body: lastBody, meta } = splitTail(last.content!);
      expect([...body, { ...last, content: lastBody }]).toEqual(stored.slice(0, rest.length));

      // 3. The tail: exactly the six keys; the numbers are those of this very request.
      expect(Object.keys(meta)).toEqual([
        'tokens_used',
        'tokens_max',
        'tokens_percent',
        'messages_in_history',
        'messages_sent',
        'working_memory_size',
      ]);
      expect(meta.tokens_used).toBe(independentCount(request));
      expect(meta.tokens_max).toBe(128_000);
      expect(meta.tokens_percent).toBe(Math.round((meta.tokens_used! / 128_000) * 100));
      expect(meta.messages_in_history).toBe(rest.length);
      expect(meta.messages_sent).toBe(rest.length); // phase 1 sends the whole history
      expect(meta.working_memory_size).toBe(Buffer.byteLength(MEMORY));
      expect(ofType(events, 'prompt_built')[i]!.tokens.total).toBe(independentCount(request));
    }

    // The breakdown adds up, and the prefix stays stable from one request to the next.
    const built = ofType(events, 'prompt_built');
    for (const b of built) expect(b.tokens.system + b.tokens.memory + b.tokens.history + b.tokens.tail).toBeCloseTo(b.tokens.counted, -1);
    const [r2, r3] = [llm.requests[1]!, llm.requests[2]!];
    expect(r3.messages.slice(0, r2.messages.length - 1)).toEqual(r2.messages.slice(0, -1));

    // Nothing of the tail is ever stored.
    const log = JSON.stringify(logEntries(session.dir));
    expect(log).not.toContain('context_meta');
    expect(log).not.toContain('tokens_used');
    await session.close();
  });

  it('the system prompt holds no per-turn values: identical across requests while the memory is unchanged', async () => {
    const llm = scriptedModel(() => ({ text: 'ok' }));
    const session = await newSession({ llm });
    for (let i = 0; i < 7; i++) await session.prompt(`question ${i}`);
    const systems = new Set(llm.requests.map((r) => r.messages[0]!.content));
    expect(systems.size).toBe(1);
    // The seventh request carries a reminder, in the tail only.
    expect(splitTail(llm.requests[6]!.messages.at(-1)!.content!).reminder).not.toBeNull();
    await session.close();
  });
});

/**
 * memoryPosition (docs/design.md §4): 'before-history' is the order above; 'after-history'
 * keeps the system message to the stable prompt and puts the memory block before the last
 * message's text, so a memory write leaves the cached history prefix as it was.
 */
// The memory in its place follows every write here (memoryRefresh 'every-write', the default: the seed's layout); 'when-cheap'
// holds it and carries the changes in the tail (its own test below).
describe.each(['before-history', 'after-history'] as const)('request layout with memoryPosition %s', (position) => {
  const OPEN = '<working_memory file="working-memory/overview.md">';
  const memoryRefresh = 'every-write' as const;
  const write = (content: string) => ({ toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content } }] });

  it('a request carrying a reminder counts as an independent count of the whole request', async () => {
    // The tail is counted apart from the last message's own text (lineCounts.ts): the sum must stay the whole's count.
    const llm = scriptedModel((_, i) => ({ text: `Answer ${i}: 12 roses, 3 tulips.\n` }));
    const session = await newSession({ llm, settings: { memoryPosition: position, memoryRefresh } });
    for (let i = 0; i < 9; i++) await session.prompt(i % 2 ? `Question ${i}?` : `Question ${i}:\n  see 1234567 / 89.`);
    const reminded = llm.requests.filter((r) => splitTail(r.messages.at(-1)!.content!).reminder !== null);
    expect(reminded.length).toBeGreaterThan(1);
    for (const request of llm.requests)
      expect(splitTail(request.messages.at(-1)!.content!).meta.tokens_used).toBe(independentCount(request));
    await session.close();
  });

  it.each(['phase1', 'phase2', 'hybrid'] as const)(
    '%s: one memory block where the position says, the history as the mode selects it, figures that add up',
    async (mode) => {
      const llm = scriptedModel([
        { text: 'First answer.' },
        write(MEMORY),
        { text: 'Noted in memory.' },
        { text: 'Third answer.' },
        { text: 'Fourth answer.' },
      ]);
      const session = await newSession({
        llm,
        instructions: 'You are a gardening assistant.',
        settings: { historyMode: mode, hybridRecent: 3, recentTurns: 1, memoryPosition: position, memoryRefresh },
      });
      const events = collect(session);
      for (const q of ['Hello, garden.', 'Remember: clay soil, roses.', 'What next?', 'And then?']) await session.prompt(q);
      expect(llm.requests).toHaveLength(5);
      const stored = logEntries(session.dir).flatMap((e) => (e.type === 'message' ? [e.message] : []));
      const built = ofType(events, 'prompt_built');
      expect(built.map((b) => b.mode)).toEqual(Array(5).fill(mode));

      for (const [i, request] of llm.requests.entries()) {
        const [system, ...rest] = request.messages;
        const b = built[i]!;
        const all = request.messages.map((m) => m.content ?? '').join('\n');
        // Exactly one memory block per request, wherever it is.
        expect(all.split(OPEN)).toHaveLength(2);
        expect(all.split('<detail_index>')).toHaveLength(2);
        const last = rest.at(-1)!;
        const { body, meta } = splitTail(last.content!);
        let lastBody = body;
        if (position === 'before-history') {
          expect(system!.content).toContain(OPEN);
          expect(body).not.toContain(OPEN);
        } else {
          expect(system!.content).not.toContain(OPEN);
          expect(system!.content!.startsWith('You are a gardening assistant.\n\n## Working memory')).toBe(true);
          // The memory block opens the last message: the block, a blank line, the message as stored.
          expect(body.startsWith(OPEN)).toBe(true);
          const end = body.indexOf('</detail_index>\n\n');
          expect(end).toBeGreaterThan(0);
          lastBody = body.slice(end + '</detail_index>\n\n'.length);
        }
        // The history is the stored messages the mode selects, in order; the tail is on the last only.
        expect([...rest.slice(0, -1), { ...last, content: lastBody }]).toEqual(stored.slice(b.range[0], b.range[1]));
        expect(meta.messages_sent).toBe(rest.length);
        expect(meta.tokens_used).toBe(independentCount(request));
        expect(b.tokens.total).toBe(independentCount(request));
        // The groups add up to the count; the cacheable prefix is everything before the last message.
        expect(b.tokens.system + b.tokens.memory + b.tokens.history + b.tokens.tail).toBe(b.tokens.counted);
        expect(b.tokens.counted - b.tokens.cacheable).toBe(session.counter.message(last));
        // Breakpoints: after the stable prompt (and the memory, when it is in the system message); before the history, in
        // the last message at the end of its own text (before the tail); after it, on the message before the last (the next
        // request sends the last one without the memory).
        const n = request.messages.length;
        expect(request.cacheBreakpoints).toEqual(
          position === 'before-history'
            ? [{ message: 0, chars: system!.content!.indexOf(OPEN) - 2 }, { message: 0 }, { message: n - 1, chars: body.length }]
            : [{ message: 0 }, ...(n > 2 ? [{ message: n - 2 }] : [])],
        );
      }
      // The system message never changes after the history; before it, the memory write changed it.
      const systems = new Set(llm.requests.map((r) => r.messages[0]!.content));
      expect(systems.size).toBe(position === 'after-history' ? 1 : 2);
      await session.close();
    },
  );

  it('phase 1: the request after a memory write shares every message but the last with the one before only after the history', async () => {
    const llm = scriptedModel([{ text: 'First answer.' }, write(MEMORY), { text: 'Noted.' }, { text: 'Third answer.' }]);
    const session = await newSession({ llm, settings: { injectHistory: true, memoryPosition: position, memoryRefresh } });
    for (const q of ['Hello.', 'Remember this.', 'Next?']) await session.prompt(q);
    // Request 3 follows the write (request 2); request 4 is the next turn.
    const [, r2, r3, r4] = llm.requests;
    const sharedPrefix = (a: typeof r2, b: typeof r2) =>
      JSON.stringify(b!.messages.slice(0, a!.messages.length - 1)) === JSON.stringify(a!.messages.slice(0, -1));
    expect(sharedPrefix(r2, r3)).toBe(position === 'after-history');
    expect(sharedPrefix(r3, r4)).toBe(true);
    await session.close();
  });
});

describe("request layout with memoryRefresh 'when-cheap'", () => {
  const write = (content: string) => ({ toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content } }] });

  it('phase 1: a memory write leaves the memory in its place and every message but the last as they were; the tail carries the change', async () => {
    const llm = scriptedModel([{ text: 'First answer.' }, write(MEMORY), { text: 'Noted.' }, { text: 'Third answer.' }]);
    const session = await newSession({ llm, settings: { injectHistory: true, memoryRefresh: 'when-cheap' } });
    const events = collect(session);
    for (const q of ['Hello.', 'Remember this.', 'Next?']) await session.prompt(q);
    const [r1, r2, r3, r4] = llm.requests;
    const sharedPrefix = (a: typeof r2, b: typeof r2) =>
      JSON.stringify(b!.messages.slice(0, a!.messages.length - 1)) === JSON.stringify(a!.messages.slice(0, -1));
    expect(sharedPrefix(r2, r3)).toBe(true);
    expect(sharedPrefix(r3, r4)).toBe(true);
    expect(new Set([r1, r2, r3, r4].map((r) => r!.messages[0]!.content)).size).toBe(1);
    // The memory as it stands: the copy in the system message and the tail's update, as the model reads them.
    for (const r of [r3, r4]) {
      const content = String(r!.messages.at(-1)!.content);
      expect(content).toContain('<working_memory_update file="working-memory/overview.md">');
      const copy = /<working_memory[^>]*>\n([\s\S]*?)\n<\/working_memory>/.exec(String(r!.messages[0]!.content))![1]!;
      expect(applyMemoryUpdate(copy, content.slice(content.indexOf('\n\n<context_meta>')))).toBe(MEMORY.trimEnd());
    }
    // Every request's figures still equal an independent count of what was sent.
    for (const [i, request] of llm.requests.entries())
      expect(ofType(events, 'prompt_built')[i]!.tokens.total).toBe(independentCount(request));
    await session.close();
  });
});
