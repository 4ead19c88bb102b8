/**
 * Item memory persisted in the keyv store, one key per item (itemKeys.ts), so an add costs
 * one write, not a rewrite of the set. Only the owner's items are loaded: the key must be
 * theirs and an item that names a user must name them. Writes are queued behind the
 * in-memory change and `flush()` waits for them; a restart restores the same items.
 */
import { ItemMemory, type ItemMemoryOptions, type MemoryItem } from './itemMemory.js';
import { itemOwner, itemPrefix, legacyItemPrefix, ownsKey, type ItemOwner } from './itemKeys.js';
import type { StateStore } from '../storage/stateStore.js';

export interface PersistentItemMemory {
  memory: ItemMemory;
  /** Wait until every change so far is in the store; throws if a write failed. */
  flush(): Promise<void>;
  /** Stop listening (the memory stays usable in-process). */
  detach(): void;
}

/** `scope`: whose items, `{ kind: 'user', id }` or the string form `user:<id>` / `session:<id>`. */
export async function openItemMemory(
  store: StateStore,
  scope: ItemOwner | string,
  options: ItemMemoryOptions,
): Promise<PersistentItemMemory> {
  const owner = itemOwner(scope);
  const prefix = itemPrefix(owner);
  const memory = new ItemMemory(options);
  const current = await ownedItems(store, owner, prefix);
  const legacyPrefix = legacyItemPrefix(owner);
  const legacy = legacyPrefix === null ? [] : await ownedItems(store, owner, legacyPrefix);
  memory.restore([...current, ...legacy]);
  const live = new Set(memory.items().map((i) => i.id));
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  const enqueue = (op: () => Promise<void>): void => {
    chain = chain.then(op).catch((error) => {
      failure ??= error;
    });
  };
  // Items kept under the raw id move to the encoded key: written there first, so nothing is lost if we stop between.
  for (const item of legacy) {
    if (live.has(item.id)) enqueue(() => store.set(prefix + item.id, item));
    enqueue(() => store.delete(legacyPrefix + item.id));
  }
  // Items that expired while the process was away leave the store too.
  for (const item of current) if (!live.has(item.id)) enqueue(() => store.delete(prefix + item.id));
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

/** Delete every item of the owner (a removed session's), under its keys and the older raw ones; no one else's. */
export async function removeItemMemory(store: StateStore, scope: ItemOwner | string): Promise<void> {
  const owner = itemOwner(scope);
  for (const prefix of [itemPrefix(owner), legacyItemPrefix(owner)]) {
    if (prefix === null) continue;
    for (const [key] of await store.entries(prefix)) if (ownsKey(prefix, key)) await store.delete(key);
  }
}

/** The owner's items under `prefix`: keys of longer ids that share it, and items naming another user, are left alone. */
async function ownedItems(store: StateStore, owner: ItemOwner, prefix: string): Promise<MemoryItem[]> {
  const found: MemoryItem[] = [];
  for (const [key, item] of await store.entries<unknown>(prefix)) {
    if (!ownsKey(prefix, key) || !isItem(item) || key !== prefix + item.id) continue;
    if (owner.kind === 'user' && item.userId !== undefined && item.userId !== owner.id) continue;
    found.push(item);
  }
  return found;
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
