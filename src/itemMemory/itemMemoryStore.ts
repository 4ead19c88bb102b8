/**
 * Item memory persisted in the keyv store, one key per item (`items:<scope>:<id>`), so an
 * add costs one write, not a rewrite of the set. Writes are queued behind the in-memory
 * change and `flush()` waits for them; a restart restores the same items.
 */
import { ItemMemory, type ItemMemoryOptions, type MemoryItem } from './itemMemory.js';
import type { StateStore } from '../storage/stateStore.js';

export interface PersistentItemMemory {
  memory: ItemMemory;
  /** Wait until every change so far is in the store; throws if a write failed. */
  flush(): Promise<void>;
  /** Stop listening (the memory stays usable in-process). */
  detach(): void;
}

export async function openItemMemory(store: StateStore, scope: string, options: ItemMemoryOptions): Promise<PersistentItemMemory> {
  if (!/^[\w:.-]{1,200}$/.test(scope)) throw new Error(`item memory scope ${JSON.stringify(scope)} must be letters, digits, _ : . -`);
  const prefix = `items:${scope}:`;
  const memory = new ItemMemory(options);
  const stored = (await store.entries<MemoryItem>(prefix)).map(([, item]) => item).filter(isItem);
  memory.restore(stored);
  const live = new Set(memory.items().map((i) => i.id));
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  const enqueue = (op: () => Promise<void>): void => {
    chain = chain.then(op).catch((error) => {
      failure ??= error;
    });
  };
  // Items that expired while the process was away leave the store too.
  for (const item of stored) if (!live.has(item.id)) enqueue(() => store.delete(prefix + item.id));
  const stop = memory.onChange((change) => {
    if (change.added) {
      const item = change.added;
      enqueue(() => store.set(prefix + item.id, item));
    }
    for (const id of change.removed ?? []) enqueue(() => store.delete(prefix + id));
  });
  return {
    memory,
    flush: async () => {
      await chain;
      if (failure) {
        const error = failure;
        failure = null;
        throw error;
      }
    },
    detach: stop,
  };
}

function isItem(value: unknown): value is MemoryItem {
  const v = value as Partial<MemoryItem> | null;
  return (
    !!v &&
    typeof v.id === 'string' &&
    typeof v.content === 'string' &&
    typeof v.importance === 'number' &&
    typeof v.timestamp === 'number' &&
    typeof v.tokens === 'number'
  );
}
