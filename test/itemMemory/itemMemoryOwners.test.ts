/**
 * Item memory belongs to its owner (issue 24 #1): a user's items are under a key no other
 * user's prefix matches, whatever the ids, and every way in (load, injection, recall,
 * forget, a removed session's cleanup) reads the owner's items only. Items kept under the
 * raw keys of earlier versions are still found by their owner, and moved. On both stores.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { itemOwner, itemPrefix, legacyItemPrefix, ownsKey } from '../../src/itemMemory/itemKeys.js';
import type { MemoryItem } from '../../src/itemMemory/itemMemory.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import type { ItemMemoryConfig } from '../../src/session/options.js';
import { openSession, removeSession } from '../../src/session/index.js';
import { stateStorePath } from '../../src/storage/sessionPaths.js';
import { openStateStore } from '../../src/storage/openStateStore.js';
import type { StateStore } from '../../src/storage/stateStore.js';
import { collect, newSession, ofType } from '../helpers.js';
import { storesUnderTest, type Where } from '../storage/stores.js';

const remember = (content: string) => ({ toolCalls: [{ name: 'remember', arguments: { content, importance: 0.9 } }] });
const recall = (query: string) => ({ toolCalls: [{ name: 'recall', arguments: { query } }] });
const user = (userId: string, inject = true): ItemMemoryConfig => ({ scope: 'user', userId, ...(inject ? { inject: {} } : {}) });

/** An item as an earlier version stored it: under `items:user:<raw id>:<item id>`. */
function legacyItem(userId: string, content: string): [string, MemoryItem] {
  const item: MemoryItem = { id: randomUUID(), content, importance: 0.8, timestamp: Date.now(), tokens: 12, userId };
  return [`items:user:${userId}:${item.id}`, item];
}

async function stateOf(where: Where, run: (state: StateStore) => Promise<void>): Promise<void> {
  const state = await openStateStore(stateStorePath(where.home), undefined, where.store);
  try {
    await run(state);
  } finally {
    await state.close();
  }
}

describe('item keys', () => {
  it("round 3 #1: no owner prefix matches another owner's key, for any ids", () => {
    // Any text as an id, and often one id extending another (`org1` and `org1:alice`, `a%` and `a%3A`).
    const id = fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), fc.stringMatching(/^[a:%3A]{1,6}$/));
    const pair = fc.tuple(id, id, fc.boolean()).map(([a, x, extend]) => [a, extend ? a + x : x] as const);
    fc.assert(
      fc.property(pair, fc.boolean(), ([a, b], swap) => {
        const [mine, theirs] = swap ? [b, a] : [a, b];
        fc.pre(mine !== theirs);
        const key = itemPrefix(itemOwner({ kind: 'user', id: theirs })) + randomUUID();
        const prefix = itemPrefix(itemOwner({ kind: 'user', id: mine }));
        expect(key.startsWith(prefix)).toBe(false); // encoded ids hold no `:`: the key alone is unambiguous
      }),
      { numRuns: 2000 },
    );
    // The old raw prefix of `org1` matches `org1:alice`'s old keys; the tail tells them apart.
    expect(ownsKey('items:user:org1:', `items:user:org1:alice:${randomUUID()}`)).toBe(false);
    expect(ownsKey('items:user:org1:', `items:user:org1:${randomUUID()}`)).toBe(true);
    expect(legacyItemPrefix({ kind: 'user', id: 'org1:alice' })).toBe('items:user:org1:alice:');
    expect(legacyItemPrefix({ kind: 'user', id: 'org1' })).toBeNull(); // the same key as before
    expect(() => itemOwner({ kind: 'user', id: '' })).toThrow(/non-empty/);
    expect(() => itemOwner({ kind: 'user', id: '\ud800' })).toThrow(/user id/);
  });
});

describe.each(storesUnderTest('item memory owners'))('$name store', (where) => {
  it("round 3 #1: a user never gets another user's items, though one id starts with the other; old keys still reach their owner", async () => {
    const w = where.fresh();
    // What earlier versions left: org1:alice's item under the raw key that org1's prefix matches, and one of org1's own.
    const [aliceOldKey, aliceOld] = legacyItem('org1:alice', 'Alice stores the backup tapes in locker 12.');
    const [orgOldKey, orgOld] = legacyItem('org1', 'The org1 office backup tapes go offsite on Fridays.');
    await stateOf(w, async (state) => {
      await state.set(aliceOldKey, aliceOld);
      await state.set(orgOldKey, orgOld);
    });

    const alice = await newSession({
      llm: scriptedModel([remember('Alice backup tapes code is 4417.'), { text: 'Noted.' }]),
      ...w,
      itemMemory: user('org1:alice'),
    });
    await alice.prompt('Remember my backup tapes code.');
    await alice.close();

    const llm = scriptedModel([
      recall('backup tapes'),
      { toolCalls: [{ name: 'forget', arguments: { strategy: 'capacity_based', threshold: 0 } }] },
      { text: 'Done.' },
    ]);
    const org = await newSession({ llm, ...w, itemMemory: user('org1') });
    const events = collect(org);
    await org.prompt('Where are the backup tapes?');
    await org.close();
    const sent = JSON.stringify(llm.requests);
    expect(sent).not.toMatch(/4417|locker 12/); // neither injected nor recalled
    expect(llm.requests[0]!.messages[0]!.content).toContain('<relevant_memories>\n- The org1 office backup tapes go offsite on Fridays.');
    const results = ofType(events, 'tool_end').map((e) => e.content);
    expect(results[0]).toMatch(/^- \[[0-9a-f-]+\] The org1 office backup tapes go offsite on Fridays\./);
    expect(results[1]).toBe('Forgot 1 item; 0 left.'); // org1's own, nobody else's

    // Alice still has both: the one kept under the old key is found and moved to the encoded one.
    const llm2 = scriptedModel([recall('backup tapes'), { text: 'Locker 12.' }]);
    const again = await newSession({ llm: llm2, ...w, itemMemory: user('org1:alice') });
    const events2 = collect(again);
    await again.prompt('Where are my backup tapes?');
    await again.close();
    const recalled = ofType(events2, 'tool_end')[0]!.content;
    expect(recalled).toContain('Alice backup tapes code is 4417.');
    expect(recalled).toContain('Alice stores the backup tapes in locker 12.');
    expect(llm2.requests[0]!.messages[0]!.content).not.toContain('offsite on Fridays');
    await stateOf(w, async (state) => {
      expect(await state.get(aliceOldKey)).toBeUndefined();
      expect(await state.get(`items:user:org1%3Aalice:${aliceOld.id}`)).toEqual(aliceOld);
      expect((await state.entries('items:user:org1:')).map(([key]) => key)).toEqual([]); // org1 forgot its own, and only that
    });
  });

  it('round 3 #1: any user id works, and removing a session removes its own items only', async () => {
    const w = where.fresh();
    const odd = 'org1/bob ü:%41';
    const bob = await newSession({
      llm: scriptedModel([remember('Bob prefers the night shift.'), { text: 'Noted.' }]),
      ...w,
      itemMemory: user(odd),
    });
    await bob.prompt('I like nights.');
    await bob.close();
    const llm = scriptedModel([{ text: 'Nights.' }]);
    const again = await newSession({ llm, ...w, itemMemory: user(odd) });
    await again.prompt('Which shift do I prefer?');
    await again.close();
    expect(llm.requests[0]!.messages[0]!.content).toContain('- Bob prefers the night shift.');
    const other = scriptedModel([{ text: '?' }]);
    const stranger = await newSession({ llm: other, ...w, itemMemory: user('org1/bob ü') });
    await stranger.prompt('Which shift does Bob prefer?');
    await stranger.close();
    expect(other.requests[0]!.messages[0]!.content).not.toContain('night shift');

    const a = await newSession({
      llm: scriptedModel([remember('Session A notes the red folder.'), { text: 'Noted.' }]),
      ...w,
      itemMemory: {},
    });
    await a.prompt('Red folder.');
    await a.close();
    await stateOf(w, async (state) => {
      // A key that only an old, raw prefix of A's would also have matched: not A's, so it stays.
      await state.set(`items:session:${a.id}:x:${randomUUID()}`, { kept: true });
      await removeSession(a.id, w);
      expect((await state.entries(`items:session:${a.id}:`)).map(([, v]) => v)).toEqual([{ kept: true }]);
      expect((await state.entries(itemPrefix({ kind: 'user', id: odd }))).length).toBe(1);
    });
    await expect(openSession(a.id, { llm: scriptedModel([]), ...w, env: {} })).rejects.toThrow();
  });
});
