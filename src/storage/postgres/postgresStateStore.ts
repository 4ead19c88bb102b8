/**
 * The key-value state (session index, reminder trackers, item memory) of sessions kept in
 * Postgres, in the store's `state` table, so that any instance serving a session finds its
 * tracker and item memories — nothing stays on the machine that served it last. Values are
 * JSON text; like the files under `<home>/state/`, the last writer of a key wins (the
 * session's own writes are already serialised by its lease).
 */
import type { StateStore } from '../stateStore.js';
import type { Database } from './database.js';

export function postgresStateStore(db: Database): StateStore {
  const { s } = db;
  return {
    path: `${db.location} (table state)`,
    get: async <T>(key: string) => {
      const rows = await db.query<{ value: string }>(`SELECT value FROM ${s}.state WHERE key = $1`, [key]);
      return rows[0] ? (JSON.parse(rows[0].value) as T) : undefined;
    },
    set: async (key, value) => {
      const text = JSON.stringify(value);
      if (text === undefined) throw new TypeError(`state ${key}: ${typeof value} cannot be stored (not JSON)`);
      await db.query(`INSERT INTO ${s}.state (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [
        key,
        text,
      ]);
    },
    delete: async (key) => {
      await db.query(`DELETE FROM ${s}.state WHERE key = $1`, [key]);
    },
    entries: async <T>(prefix: string) => {
      // starts_with, not LIKE: a key may hold `_` or `%`, which LIKE would read as wildcards.
      const rows = await db.query<{ key: string; value: string }>(
        `SELECT key, value FROM ${s}.state WHERE starts_with(key, $1) ORDER BY key`,
        [prefix],
      );
      return rows.map((row): [string, T] => [row.key, JSON.parse(row.value) as T]);
    },
    close: async () => {}, // the pool is the store's: closed with it
  };
}
