/**
 * The key-value state beside the session folders: the session index, the reminder
 * tracker state and item memory. By default files under `<home>/state/` (no native
 * addon, see fileStateStore.ts); a host may pass any keyv instance instead
 * (keyvStateStore.ts), e.g. SQLite through `@keyv/sqlite`, an optional peer.
 */
import type Keyv from 'keyv';
import { fileStateStore } from './fileStateStore.js';
import { keyvStateStore } from './keyvStateStore.js';
import type { SessionStore } from './sessionStore.js';

export interface StateStore {
  /** Where the state lives, for messages. */
  readonly path: string;
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
  /** Entries whose key starts with `prefix`. */
  entries<T>(prefix: string): Promise<[string, T][]>;
  close(): Promise<void>;
}

/**
 * The host's keyv when given, else the state the session store keeps itself (a database),
 * else the file store in `dir` (`<home>/state`), reporting damaged files to `report` (default
 * a process warning).
 */
export async function openStateStore(
  dir: string,
  keyv?: Keyv,
  sessions?: SessionStore,
  report?: (message: string) => void,
): Promise<StateStore> {
  return keyv ? keyvStateStore(keyv) : (sessions?.state?.() ?? fileStateStore(dir, report ? { report } : {}));
}
