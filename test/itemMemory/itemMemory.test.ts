import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ItemMemory, ItemMemoryError, type ItemMemoryOptions } from '../../src/itemMemory/itemMemory.js';
import { openItemMemory } from '../../src/itemMemory/itemMemoryStore.js';
import { MinHeap } from '../../src/itemMemory/minHeap.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { openSession } from '../../src/session/index.js';
import { openStateStore } from '../../src/storage/openStateStore.js';
import { loadTokenCounter, type TokenCounter } from '../../src/tokens/tokens.js';
import { collect, newSession, ofType, tempHome } from '../helpers.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter('gpt-4o');
});

function clock(start = 1_800_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}
const make = (options: Partial<ItemMemoryOptions> & { now: () => number }) =>
  new ItemMemory({ countTokens: (t) => counter.text(t), ...options });

describe('item memory rules (docs/design.md §8), with an injected clock', () => {
  it('expires items after 120 minutes, on add, retrieve and forget', () => {
    const c = clock();
    const memory = make({ now: c.now });
    memory.add({ content: 'The deploy window is Tuesday morning.' });
    c.advance(119 * MIN);
    expect(memory.retrieve('deploy window').map((r) => r.item.content)).toEqual(['The deploy window is Tuesday morning.']);
    c.advance(2 * MIN);
    expect(memory.retrieve('deploy window')).toEqual([]);
    expect(memory.stats().count).toBe(0);
  });

  it('decays by 0.95 per 6 hours, with a floor of 0.1', () => {
    const memory = make({ now: () => 0, maxAgeMinutes: 100_000 });
    expect(memory.decay(0)).toBe(1);
    expect(memory.decay(6 * HOUR)).toBeCloseTo(0.95, 12);
    expect(memory.decay(12 * HOUR)).toBeCloseTo(0.9025, 12);
    expect(memory.decay(60 * HOUR)).toBeCloseTo(0.95 ** 10, 12);
    expect(memory.decay(300 * HOUR)).toBe(0.1); // 0.95^50 = 0.077 would be below the floor
  });

  it('evicts the lowest priority = importance × decay: low importance first, then the oldest, and decay counts', () => {
    const c = clock();
    const memory = make({ now: c.now, maxCapacity: 3, maxAgeMinutes: 48 * 60 });
    const a = memory.add({ content: 'alpha fact', importance: 0.9 });
    const b = memory.add({ content: 'beta fact', importance: 0.2 });
    memory.add({ content: 'gamma fact', importance: 0.5 });
    memory.add({ content: 'delta fact', importance: 0.7 });
    expect(memory.items().map((i) => i.id)).not.toContain(b.id); // 0.2 went first
    // Equal importance: the older one goes.
    const e = memory.add({ content: 'epsilon fact', importance: 0.5 });
    expect(
      memory
        .items()
        .map((i) => i.content)
        .sort(),
    ).toEqual(['alpha fact', 'delta fact', 'epsilon fact']);
    // Decay: after 24 h, 0.9 × 0.95^4 = 0.733 is below a fresh 0.75.
    c.advance(24 * HOUR);
    expect(memory.priority(a)).toBeCloseTo(0.9 * 0.95 ** 4, 10);
    memory.add({ content: 'zeta fact', importance: 0.75 });
    memory.add({ content: 'eta fact', importance: 0.74 });
    expect(
      memory
        .items()
        .map((i) => i.content)
        .sort(),
    ).toEqual(['eta fact', 'zeta fact', expect.any(String)].sort());
    expect(memory.items().map((i) => i.id)).not.toContain(e.id);
  });

  it('past the 0.1 decay floor, eviction follows the floored priority (a TTL of 30 days)', () => {
    const c = clock();
    const memory = make({ now: c.now, maxCapacity: 2, maxAgeMinutes: 30 * 24 * 60 });
    // 0.95^(15 days / 6 h) = 0.046, 0.9 × 0.046 = 0.041 unfloored; floored to 0.1: 0.9 × 0.1 = 0.090.
    const old = memory.add({ content: 'an important old fact', importance: 0.9 });
    c.advance(15 * 24 * HOUR);
    const fresh = memory.add({ content: 'a trivial fresh fact', importance: 0.05 });
    expect(memory.priority(old)).toBeCloseTo(0.09, 10);
    expect(memory.priority(fresh)).toBeCloseTo(0.05, 10);
    memory.add({ content: 'a third fact', importance: 0.5 });
    // The lowest priority goes: 0.050, not 0.090.
    expect(
      memory
        .items()
        .map((i) => i.content)
        .sort(),
    ).toEqual(['a third fact', 'an important old fact']);
    // Among floored items, the lower importance goes first.
    const c2 = clock();
    const two = make({ now: c2.now, maxCapacity: 2, maxAgeMinutes: 30 * 24 * 60 });
    two.add({ content: 'older but important', importance: 0.8 });
    c2.advance(8 * 24 * HOUR);
    two.add({ content: 'newer but minor', importance: 0.3 });
    // Unfloored 0.013 and 0.026; both floored: 0.08 and 0.03.
    c2.advance(12 * 24 * HOUR);
    two.add({ content: 'fresh', importance: 0.5 });
    expect(
      two
        .items()
        .map((i) => i.content)
        .sort(),
    ).toEqual(['fresh', 'older but important']);
  });

  it('keeps within maxTokens, counted in real tokens, and refuses an item larger than all of it', () => {
    const memory = make({ now: clock().now, maxCapacity: 100, maxTokens: 40 });
    const sentence = (tag: string) => Array.from({ length: 15 }, (_, i) => `${tag}${i}`).join(' ');
    for (const [tag, importance] of [
      ['alpha', 0.9],
      ['beta', 0.1],
      ['gamma', 0.5],
    ] as const) {
      expect(counter.text(sentence(tag))).toBeGreaterThan(14);
      memory.add({ content: sentence(tag), importance });
    }
    expect(memory.stats().tokens).toBeLessThanOrEqual(40);
    expect(memory.items().map((i) => i.importance)).not.toContain(0.1);
    expect(() => memory.add({ content: 'word '.repeat(100) })).toThrow(/is \d+ tokens; the memory holds at most 40/);
  });

  it('forgets by importance, by age and by capacity, always after the TTL', () => {
    const c = clock();
    const memory = make({ now: c.now, maxCapacity: 10, maxAgeMinutes: 7 * 24 * 60 });
    memory.add({ content: 'old and important', importance: 0.9 });
    c.advance(3 * 24 * HOUR);
    memory.add({ content: 'trivial', importance: 0.1 });
    memory.add({ content: 'medium', importance: 0.5 });
    memory.add({ content: 'high', importance: 0.8 });
    expect(memory.forget({ strategy: 'importance_based', threshold: 0.3 }).map((i) => i.content)).toEqual(['trivial']);
    expect(memory.forget({ strategy: 'time_based', maxAgeDays: 2 }).map((i) => i.content)).toEqual(['old and important']);
    expect(memory.forget({ strategy: 'capacity_based', threshold: 1 }).map((i) => i.content)).toEqual(['medium']);
    expect(memory.items().map((i) => i.content)).toEqual(['high']);
    // The TTL applies first, whatever the strategy.
    c.advance(7 * 24 * HOUR + MIN);
    expect(memory.forget({ strategy: 'importance_based', threshold: 0 }).map((i) => i.content)).toEqual(['high']);
  });

  it('summarises greedily by importance then recency; the last item is cut only if 50+ characters remain', () => {
    const c = clock();
    const memory = make({ now: c.now });
    memory.add({ content: 'A'.repeat(100), importance: 0.5 });
    c.advance(MIN);
    memory.add({ content: 'B'.repeat(40), importance: 0.5 });
    memory.add({ content: 'C'.repeat(100), importance: 0.9 });
    expect(memory.contextSummary(1000).split('\n')).toEqual([`- ${'C'.repeat(100)}`, `- ${'B'.repeat(40)}`, `- ${'A'.repeat(100)}`]);
    const cut = memory.contextSummary(102 + 1 + 42 + 1 + 60);
    expect(cut.split('\n').at(-1)).toBe(`- ${'A'.repeat(100)}`.slice(0, 59) + '…');
    expect(cut.length).toBeLessThanOrEqual(102 + 1 + 42 + 1 + 60);
    expect(memory.contextSummary(102 + 1 + 42 + 1 + 49).split('\n')).toHaveLength(2); // 49 left: no partial item
  });

  it('refuses bad input clearly and stores nothing half-way', () => {
    const memory = make({ now: clock().now });
    const changes: unknown[] = [];
    memory.onChange((c) => changes.push(c));
    for (const importance of [-0.1, 1.5, Number.NaN, '0.5']) {
      expect(() => memory.add({ content: 'x', importance })).toThrow(ItemMemoryError);
    }
    expect(() => memory.add({ content: '   ' })).toThrow(/content must be a non-empty string/);
    expect(() => memory.add({ content: 42 })).toThrow(/content must be a non-empty string/);
    expect(() => memory.retrieve(42)).toThrow(/query must be a string, got number/);
    expect(() => memory.forget({ strategy: 'random' })).toThrow(/unknown forget strategy "random"/);
    expect(() => memory.forget({ strategy: 'time_based' })).toThrow(/maxAgeDays must be a number/);
    expect(memory.size).toBe(0);
    expect(changes).toEqual([]);
    expect(() => make({ now: Date.now, maxCapacity: 0 })).toThrow(/maxCapacity/);
  });

  it('the heap pops in order (property test)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.integer(),
            fc.double({ noNaN: true, min: -1e9, max: 1e9 }).map((v) => v + 0),
          ),
          { maxLength: 300 },
        ),
        (values) => {
          const heap = new MinHeap<number>((a, b) => a < b);
          for (const v of values) heap.push(v);
          const out: number[] = [];
          while (heap.size) out.push(heap.pop()!);
          expect(out).toEqual([...values].sort((a, b) => a - b));
        },
      ),
    );
  });
});

describe('retrieval quality on the labelled set (half Chinese)', () => {
  it('the expected item is in the top 3 for at least 90 % of queries', () => {
    const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'item-memory-retrieval.json'), 'utf8')) as {
      items: { id: string; content: string; importance: number }[];
      queries: { query: string; expected: string }[];
    };
    expect(fixture.items.length).toBeGreaterThanOrEqual(40);
    expect(fixture.queries.length).toBeGreaterThanOrEqual(20);
    expect(fixture.queries.filter((q) => /[\u4e00-\u9fff]/.test(q.query)).length).toBeGreaterThanOrEqual(fixture.queries.length / 2);
    const memory = make({ now: clock().now, maxCapacity: 1000, maxTokens: 100_000 });
    const idOf = new Map<string, string>();
    for (const item of fixture.items) idOf.set(memory.add({ content: item.content, importance: item.importance }).id, item.id);
    const misses: string[] = [];
    let hits = 0;
    for (const { query, expected } of fixture.queries) {
      const top = memory.retrieve(query, { limit: 3 }).map((r) => idOf.get(r.item.id));
      if (top.includes(expected)) hits++;
      else misses.push(`${query} → ${top.join(', ')} (expected ${expected})`);
    }
    const share = hits / fixture.queries.length;
    const figures = `item memory retrieval: ${hits}/${fixture.queries.length} queries (${(share * 100).toFixed(1)} %) have the expected item in the top 3${misses.length ? `; misses: ${misses.join('; ')}` : ''}`;
    expect(share, figures).toBeGreaterThanOrEqual(0.9);
  });
});

describe('persistence', () => {
  it('survives a restart: the same items, the same retrieval', async () => {
    const home = tempHome();
    const c = clock();
    const path = join(home, 'state');
    const options = { now: c.now, countTokens: (t: string) => counter.text(t), maxCapacity: 5 };
    const store = await openStateStore(path);
    const first = await openItemMemory(store, 'user:ada', options);
    for (const [content, importance] of [
      ['Ada prefers tea to coffee.', 0.6],
      ['Ada 的生日是三月十五日。', 0.9],
      ['The build uses Vite and Vitest.', 0.4],
    ] as const) {
      first.memory.add({ content, importance });
    }
    first.memory.forgetItem(first.memory.items()[2]!.id);
    await first.flush();
    const before = first.memory.retrieve('Ada 生日').map((r) => [r.item.id, r.item.content]);
    await store.close();

    const reopened = await openStateStore(path);
    const second = await openItemMemory(reopened, 'user:ada', options);
    expect(
      second.memory
        .items()
        .map((i) => i.content)
        .sort(),
    ).toEqual(['Ada 的生日是三月十五日。', 'Ada prefers tea to coffee.'].sort());
    expect(second.memory.retrieve('Ada 生日').map((r) => [r.item.id, r.item.content])).toEqual(before);
    // Items that expire while nobody is looking are gone after the next open, from the store too.
    c.advance(3 * HOUR);
    const third = await openItemMemory(reopened, 'user:ada', options);
    expect(third.memory.size).toBe(0);
    await third.flush();
    expect(await reopened.entries('items:user:ada:')).toEqual([]);
    await reopened.close();
  });
});

describe('in a session', () => {
  it('remember / recall / forget tools, relevant memories after overview.md, persisted per session', async () => {
    const home = tempHome();
    const llm = scriptedModel([
      {
        toolCalls: [{ name: 'remember', arguments: { content: 'The user is training for the Lyon marathon in April.', importance: 0.8 } }],
      },
      { toolCalls: [{ name: 'remember', arguments: { content: 'The user dislikes running in the rain.', importance: 0.4 } }] },
      { toolCalls: [{ name: 'remember', arguments: { content: 'x', importance: 2 } }] },
      { text: 'Noted.' },
      { toolCalls: [{ name: 'recall', arguments: { query: 'marathon' } }] },
      { text: 'You are training for Lyon.' },
    ]);
    const session = await newSession({ llm, home, itemMemory: { inject: { limit: 3, maxTokens: 100 } } });
    const events = collect(session);
    await session.prompt('I am training for the Lyon marathon and I hate rain.');
    await session.prompt('When is my marathon?');
    const results = ofType(events, 'tool_end').map((e) => e.content);
    expect(results[0]).toMatch(/^Remembered \([0-9a-f-]+, importance 0\.8, \d+ tokens\)\. 1 of 10 items in memory\./);
    expect(results[2]).toMatch(/^Error: invalid arguments for remember[\s\S]*importance/);
    expect(results[3]).toMatch(/^- \[[0-9a-f-]+\] The user is training for the Lyon marathon in April\. \(importance 0\.8, score/);
    // The second turn's requests carry the relevant items right after the working memory.
    const system = llm.requests[4]!.messages[0]!.content!;
    const memoryEnd = system.indexOf('</working_memory>');
    const relevant = system.indexOf('<relevant_memories>\n- The user is training for the Lyon marathon in April. (importance 0.8)');
    expect(memoryEnd).toBeGreaterThan(0);
    expect(relevant).toBeGreaterThan(memoryEnd);
    expect(system.indexOf('<detail_index>')).toBeGreaterThan(relevant);
    await session.close();
    const again = await openSession(session.id, { llm: scriptedModel([]), home, env: {}, itemMemory: {} });
    expect(again.tools.map((t) => t.name)).toEqual(['read', 'write', 'edit', 'compact_history', 'remember', 'recall', 'forget']);
    await again.close();
  });
});
