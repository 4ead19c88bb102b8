/**
 * The reminder tracker's write-behind: a store that is down for a moment (a database
 * restarted between two turns) leaves nothing to report once a later write lands; a store
 * that stays down is reported by `flush`, with the newest state still unwritten.
 */
import { describe, expect, it } from 'vitest';
import type { TrackerState } from '../../src/memory/reminderTracker.js';
import { TrackerWriter } from '../../src/session/trackerWriter.js';
import type { StateStore } from '../../src/storage/stateStore.js';

const state = (rounds: number): TrackerState => ({
  rounds,
  ignored: 0,
  remindedSinceUpdate: false,
  forceNext: false,
  reminders: 0,
  updates: 0,
  lastUpdateAt: null,
});

/** A store that refuses writes while `down`, and keeps what it took. */
function flakyStore() {
  const values = new Map<string, unknown>();
  const store = {
    down: false,
    writes: 0,
    values,
    path: 'memory',
    async get<T>(key: string) {
      return values.get(key) as T | undefined;
    },
    async set(key: string, value: unknown) {
      store.writes++;
      if (store.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      values.set(key, value);
    },
    async delete(key: string) {
      values.delete(key);
    },
    async entries<T>() {
      return [] as [string, T][];
    },
    async close() {},
  };
  return store satisfies StateStore;
}

describe('TrackerWriter', () => {
  it('a write that failed while the store was down is written again by flush, which then reports nothing', async () => {
    const store = flakyStore();
    const writer = new TrackerWriter(store, 'tracker');
    store.down = true;
    writer.persist(state(1));
    await expect(writer.flush()).rejects.toThrow(/ECONNREFUSED/);
    store.down = false;
    await writer.flush(); // the same state again: nothing newer came
    expect(store.values.get('tracker')).toEqual(state(1));
    writer.throwIfFailed(); // nothing left to report
  });

  it('a later write that lands supersedes a failed one: the turn after a restart is not failed for it', async () => {
    const store = flakyStore();
    const writer = new TrackerWriter(store, 'tracker');
    store.down = true;
    writer.persist(state(1));
    await new Promise((resolve) => setTimeout(resolve, 10)); // the first write goes at once, and fails
    expect(store.writes).toBe(1);
    store.down = false;
    await writer.flush(state(2));
    expect(store.values.get('tracker')).toEqual(state(2));
    expect(() => writer.throwIfFailed()).not.toThrow();
  });

  it('a store that stays down is reported by flush, each time, and the newest state is what is tried', async () => {
    const store = flakyStore();
    const writer = new TrackerWriter(store, 'tracker');
    store.down = true;
    writer.persist(state(1));
    await expect(writer.flush(state(2))).rejects.toThrow(/ECONNREFUSED/);
    await expect(writer.flush()).rejects.toThrow(/ECONNREFUSED/);
    store.down = false;
    await writer.flush();
    expect(store.values.get('tracker')).toEqual(state(2));
  });
});
