/**
 * <home>/workmem.sqlite: the keyv store for the session index, reminder tracker state and
 * item memory. WAL with synchronous=NORMAL: a commit survives a killed process (the
 * crash we test for) without an fsync per write. `throwOnErrors`, so a failed write is
 * an error rather than a silent `false`. One store per file, shared by the sessions of
 * a process and closed with the last of them.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Keyv from 'keyv';
import KeyvSqlite from '@keyv/sqlite';
import { DIR_MODE, FILE_MODE } from './atomicWrite.js';

export interface StateStore {
  readonly path: string;
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
  /** Entries whose key starts with `prefix`. */
  entries<T>(prefix: string): Promise<[string, T][]>;
  close(): Promise<void>;
}

interface Shared {
  store: Promise<StateStore>;
  users: number;
}

const open = new Map<string, Shared>();

export function openStateStore(path: string): Promise<StateStore> {
  let shared = open.get(path);
  if (!shared) {
    shared = { store: createStore(path), users: 0 };
    open.set(path, shared);
    shared.store.catch(() => open.delete(path));
  }
  shared.users++;
  const entry = shared;
  return entry.store.then((store) => ({
    ...store,
    close: async () => {
      entry.users--;
      if (entry.users === 0) {
        open.delete(path);
        await store.close();
      }
    },
  }));
}

async function createStore(path: string): Promise<StateStore> {
  mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE });
  // Private to the user, created so before SQLite opens it (its -wal and -shm files take
  // the database file's mode).
  closeSync(openSync(path, 'a', FILE_MODE));
  chmodSync(path, FILE_MODE);
  const sqlite = new KeyvSqlite({ uri: `sqlite://${path}`, busyTimeout: 5000 });
  try {
    await sqlite.query('PRAGMA journal_mode=WAL');
    await sqlite.query('PRAGMA synchronous=NORMAL');
  } catch (error) {
    throw new Error(`cannot open the state store ${path}: ${(error as Error).message}`);
  }
  const keyv = new Keyv({ store: sqlite, namespace: 'workmem', throwOnErrors: true });
  return {
    path,
    get: (key) => keyv.get(key),
    set: async (key, value) => {
      await keyv.set(key, value);
    },
    delete: async (key) => {
      await keyv.delete(key);
    },
    entries: async <T>(prefix: string) => {
      const rows = (await sqlite.query(`SELECT key FROM keyv WHERE key LIKE ? ESCAPE '\\'`, `workmem:${escapeLike(prefix)}%`)) as {
        key: string;
      }[];
      const keys = rows.map((row) => row.key.slice('workmem:'.length));
      const values = keys.length ? await keyv.getMany<T>(keys) : [];
      return keys.flatMap((key, i) => (values[i] === undefined ? [] : [[key, values[i] as T] as [string, T]]));
    },
    close: async () => {
      await keyv.disconnect();
    },
  };
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
