/**
 * Any keyv 5 instance as the state store, instead of the files under `<home>/state/`:
 * the host builds it with the adapter it wants (`new Keyv({ store: new KeyvSqlite(uri) })`,
 * Redis, Postgres, a Map) and owns it: workmem never disconnects it. Keys are
 * `session:<id>`, `tracker:<id>` and `items:<kind>:<owner>:<id>` (itemKeys.ts); give workmem its own
 * namespace. Listing by prefix (sessions, a scope's items) needs `keyv.iterator`, which
 * keyv provides for a Map and for the SQL and Redis adapters.
 */
import type Keyv from 'keyv';
import type { StateStore } from './stateStore.js';

export function keyvStateStore(keyv: Keyv): StateStore {
  return {
    path: `keyv${keyv.namespace ? ` (namespace ${keyv.namespace})` : ''}`,
    get: async <T>(key: string) => (await keyv.get(key)) as T | undefined,
    set: async (key, value) => {
      // Without throwOnErrors keyv answers a failed write with `false`: make it an error.
      if ((await keyv.set(key, value)) === false) throw new Error(`the keyv state store could not store ${key}`);
    },
    delete: async (key) => {
      await keyv.delete(key);
    },
    entries: async <T>(prefix: string) => {
      if (typeof keyv.iterator !== 'function') {
        throw new Error(
          'the keyv state store cannot list keys: its adapter does not provide keyv.iterator, which workmem needs to list sessions and item memories (use an adapter with an iterator, e.g. @keyv/sqlite, @keyv/postgres, @keyv/redis)',
        );
      }
      const out: [string, T][] = [];
      for await (const [key, value] of keyv.iterator(keyv.namespace)) {
        if (typeof key === 'string' && key.startsWith(prefix) && value !== undefined) out.push([key, value as T]);
      }
      return out;
    },
    close: async () => {}, // the host's instance: the host disconnects it
  };
}
