/**
 * Where sessions are made, found and removed: createSession / openSession hand back a
 * running Session; listSessions, findSession and removeSession work on the index (the
 * state store) and the session folders without opening a session.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Keyv from 'keyv';
import { repairPairing } from '../history/crashRecovery.js';
import type { PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { openItemMemory } from '../itemMemory/itemMemoryStore.js';
import { INITIAL_TRACKER, parseTrackerState, reconcileTracker } from '../memory/reminderTracker.js';
import { redactor, type Redact } from '../secrets/redact.js';
import { ConfigError, resolveSettings } from '../settings/config.js';
import { SessionFiles } from '../storage/sessionFiles.js';
import { SessionLock } from '../storage/sessionLock.js';
import { defaultHome, SESSION_FILES, SESSION_ID, sessionsRoot, stateStorePath } from '../storage/sessionPaths.js';
import { openStateStore, type StateStore } from '../storage/stateStore.js';
import { loadTokenCounter, type TokenCounter } from '../tokens/tokens.js';
import { INDEX_KEY, TRACKER_KEY, type OpenOptions, type SessionIndexEntry, type SessionOptions } from './options.js';
import { Session } from './session.js';
import { checkSessionOptions } from './sessionOptionsCheck.js';

export async function createSession(options: SessionOptions): Promise<Session> {
  checkSessionOptions(options, 'createSession');
  const env = options.env ?? process.env;
  const home = options.home ?? defaultHome(env);
  const resolved = resolveSettings(options.llm, options.settings, env);
  const counter = await loadTokenCounter(options.llm.model);
  const store = await openStateStore(stateStorePath(home), options.stateStore);
  let files: SessionFiles | undefined;
  try {
    files = SessionFiles.create({
      redact: sessionRedactor(options, env),
      home,
      cwd: options.cwd ?? process.cwd(),
      name: options.name ?? null,
      language: resolved.turn.language,
      model: options.llm.model,
      ...(options.now ? { now: options.now } : {}),
    });
    const entry: SessionIndexEntry = {
      id: files.id,
      dir: files.dir,
      cwd: files.meta.cwd,
      createdAt: files.meta.createdAt,
      name: files.meta.name === null ? null : files.redact(files.meta.name), // as meta.json has it: masked
    };
    await store.set(INDEX_KEY(files.id), entry);
    if (resolved.pinned) files.updateMeta({ historyMode: resolved.pinned, pinnedMode: resolved.pinned });
    const items = await openItems(store, files.id, options, counter);
    return new Session({ files, store, counter, options, resolved, tracker: INITIAL_TRACKER, damage: [], items, resumed: false });
  } catch (error) {
    files?.close();
    await store.close();
    throw error;
  }
}

export async function openSession(id: string, options: OpenOptions): Promise<Session> {
  checkSessionOptions(options, 'openSession');
  const env = options.env ?? process.env;
  const home = options.home ?? defaultHome(env);
  const resolved = resolveSettings(options.llm, options.settings, env);
  const counter = await loadTokenCounter(options.llm.model);
  const store = await openStateStore(stateStorePath(home), options.stateStore);
  let files: SessionFiles | undefined;
  try {
    const dir = await findSessionDir(store, home, id);
    files = SessionFiles.open(dir, {
      redact: sessionRedactor(options, env),
      contextWindow: resolved.turn.contextWindow,
      ...(options.now ? { now: options.now } : {}),
    });
    const damage = [...files.damage];
    const stored = await store.get<unknown>(TRACKER_KEY(files.id));
    let tracker = parseTrackerState(stored);
    if (!tracker) {
      if (stored !== undefined) damage.push('reminder tracker state was malformed; started afresh');
      tracker = INITIAL_TRACKER;
    }
    tracker = reconcileTracker(tracker, files.trackerFacts);
    damage.push(...repairPairing(files, counter)); // calls and results paired again, wherever a line was lost
    const items = await openItems(store, files.id, options, counter);
    return new Session({ files, store, counter, options, resolved, tracker, damage, items, resumed: true });
  } catch (error) {
    files?.close();
    await store.close();
    throw error;
  }
}

/** Sessions in the index and any on disk it misses, newest first; `cwd` limits them to one directory. */
export function listSessions(options: StoreOptions & { cwd?: string } = {}): Promise<SessionIndexEntry[]> {
  return withStore(options, async (store, home) => {
    const entries = (await store.entries<SessionIndexEntry>('session:')).map(([, e]) => e);
    entries.push(...sessionsOnDisk(home, new Set(entries.map((e) => e.id)))); // not in the index: an index from an earlier version, or a lost one
    return entries.filter((e) => !options.cwd || e.cwd === options.cwd).sort((a, b) => b.createdAt - a.createdAt);
  });
}

type StoreOptions = { home?: string; env?: NodeJS.ProcessEnv; stateStore?: Keyv };

async function withStore<T>(options: StoreOptions, run: (store: StateStore, home: string) => Promise<T>): Promise<T> {
  const home = options.home ?? defaultHome(options.env ?? process.env);
  const store = await openStateStore(stateStorePath(home), options.stateStore);
  try {
    return await run(store, home);
  } finally {
    await store.close();
  }
}

/** Where a session lives (an id or a unique prefix), without opening it. */
export function findSession(id: string, options: StoreOptions = {}): Promise<string> {
  return withStore(options, (store, home) => findSessionDir(store, home, id));
}

/** Delete a session: its directory and everything the store holds for it. */
export function removeSession(id: string, options: StoreOptions = {}): Promise<string> {
  return withStore(options, async (store, home) => {
    const dir = await findSessionDir(store, home, id);
    const fullId = dir.split(/[/\\]/).pop()!;
    const lock = SessionLock.acquire(dir); // refuses a session in use
    rmSync(dir, { recursive: true, force: true });
    lock.release();
    await store.delete(INDEX_KEY(fullId));
    await store.delete(TRACKER_KEY(fullId));
    for (const [key] of await store.entries(`items:session:${fullId}:`)) await store.delete(key);
    return dir;
  });
}

async function openItems(
  store: StateStore,
  sessionId: string,
  options: OpenOptions,
  counter: TokenCounter,
): Promise<PersistentItemMemory | null> {
  const config = options.itemMemory;
  if (!config) return null;
  if (config.scope === 'user' && !config.userId) throw new ConfigError('itemMemory: scope "user" needs a userId');
  const scope = config.scope === 'user' ? `user:${config.userId}` : `session:${sessionId}`;
  const { inject: _inject, scope: _scope, userId: _user, ...limits } = config;
  return openItemMemory(store, scope, { ...limits, countTokens: (t) => counter.text(t), ...(options.now ? { now: options.now } : {}) });
}

/** Sessions in the folders under `home` whose ids are not in `known`, as their meta.json describes them. */
function sessionsOnDisk(home: string, known: ReadonlySet<string>): SessionIndexEntry[] {
  const root = sessionsRoot(home);
  const found: SessionIndexEntry[] = [];
  for (const cwdDir of safeReaddir(root)) {
    for (const id of safeReaddir(join(root, cwdDir))) {
      if (!SESSION_ID.test(id) || known.has(id)) continue;
      const dir = join(root, cwdDir, id);
      try {
        const meta = JSON.parse(readFileSync(join(dir, SESSION_FILES.meta), 'utf8')) as Partial<SessionIndexEntry>;
        if (meta.id !== id || typeof meta.cwd !== 'string' || typeof meta.createdAt !== 'number') continue;
        found.push({ id, dir, cwd: meta.cwd, createdAt: meta.createdAt, name: typeof meta.name === 'string' ? meta.name : null });
      } catch {
        // no readable meta.json: not listed (openSession can still rebuild it)
      }
    }
  }
  return found;
}

async function findSessionDir(store: StateStore, home: string, id: string): Promise<string> {
  if (typeof id !== 'string' || !/^[0-9a-f-]{4,36}$/i.test(id)) {
    throw new ConfigError(`${JSON.stringify(id)} is not a session id (a UUID, or at least its first 4 characters)`);
  }
  const exact = await store.get<SessionIndexEntry>(INDEX_KEY(id));
  if (exact && isDir(exact.dir)) return exact.dir;
  const indexed = (await store.entries<SessionIndexEntry>(`session:${id}`)).map(([, e]) => e).filter((e) => isDir(e.dir));
  if (indexed.length === 1) return indexed[0]!.dir;
  if (indexed.length > 1) throw new ConfigError(`session id ${id} is ambiguous: ${indexed.map((e) => e.id).join(', ')}`);
  // Not in the index (an index from another machine, or a lost one): look on disk.
  const root = sessionsRoot(home);
  const found: string[] = [];
  for (const cwdDir of safeReaddir(root)) {
    for (const name of safeReaddir(join(root, cwdDir))) {
      if (SESSION_ID.test(name) && name.startsWith(id.toLowerCase())) found.push(join(root, cwdDir, name));
    }
  }
  if (found.length === 1) return found[0]!;
  if (found.length > 1) throw new ConfigError(`session id ${id} is ambiguous: ${found.length} sessions start with it`);
  throw new ConfigError(`no session with id ${id} under ${root}`);
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** The model's secrets, the host's and $OPENAI_API_KEY: never written or reported. */
function sessionRedactor(options: OpenOptions, env: NodeJS.ProcessEnv): Redact {
  return redactor([...(options.llm.secrets ?? []), ...(options.secrets ?? []), env.OPENAI_API_KEY]);
}
