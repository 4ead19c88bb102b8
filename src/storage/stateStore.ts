/**
 * The key-value state beside the session folders: the session index, the reminder
 * tracker state and item memory. By default files under `<home>/state/` (no native
 * addon, see fileStateStore.ts); a host may pass any keyv instance instead
 * (keyvStateStore.ts), e.g. SQLite through `@keyv/sqlite`, an optional peer; openStateStore.ts
 * picks one.
 */
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
