/** Which state store a session uses: the host's keyv, else its session store's own, else files. */
import type Keyv from 'keyv';
import { fileStateStore } from './fileStateStore.js';
import { keyvStateStore } from './keyvStateStore.js';
import type { SessionStore } from './sessionStore.js';
import type { StateStore } from './stateStore.js';

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
