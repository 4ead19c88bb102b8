/**
 * Where sessions are made, found and removed: createSession / openSession hand back a
 * running Session; listSessions, findSession and removeSession work on the index (the
 * state store) and the session folders without opening a session — or, given a `store`
 * such as Postgres, on that store.
 */
import type Keyv from 'keyv';
import { repairPairing } from '../history/crashRecovery.js';
import { pinsBetween } from '../history/historyView.js';
import type { PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { openItemMemory, removeItemMemory } from '../itemMemory/itemMemoryStore.js';
import { itemOwner, type ItemOwner } from '../itemMemory/itemKeys.js';
import { INITIAL_TRACKER, parseTrackerState, reconcileTracker } from '../memory/reminderTracker.js';
import { redactor, type Redact } from '../secrets/redact.js';
import { ConfigError, resolveSettings } from '../settings/config.js';
import { SessionRecord } from '../history/sessionRecord.js';
import { fileSessionStore } from '../storage/fileSessionStore.js';
import { defaultHome, stateStorePath } from '../storage/sessionPaths.js';
import type { SessionReader, SessionStore, SessionSummary } from '../storage/sessionStore.js';
import { SessionNotFoundError } from '../storage/storeErrors.js';
import { openStateStore } from '../storage/openStateStore.js';
import type { StateStore } from '../storage/stateStore.js';
import { telemetryFor } from '../telemetry/telemetryOption.js';
import { loadTokenCounter, type TokenCounter } from '../tokens/tokens.js';
import { INDEX_KEY, TRACKER_KEY, type OpenOptions, type SessionIndexEntry, type SessionOptions } from './options.js';
import { Session } from './session.js';
import { checkSessionOptions } from './sessionOptionsCheck.js';

/** What creating and opening share: checked options, the home, settings (warnings reported), the counter, the state store. */
async function prepare(options: OpenOptions, caller: 'createSession' | 'openSession') {
  checkSessionOptions(options, caller);
  const env = options.env ?? process.env;
  const home = options.home ?? defaultHome(env);
  const resolved = resolveSettings(options.llm, options.settings, env);
  for (const warning of resolved.warnings) options.warn?.(warning);
  const counter = await loadTokenCounter(options.llm.model);
  const state = await openStateStore(stateStorePath(home), options.stateStore, options.store, options.warn);
  const telemetry = await telemetryFor(options.telemetry, options.warn);
  return { env, home, resolved, counter, state, telemetry };
}

/** Create a new session (a log, meta and a working memory on the store) and start it. */
export async function createSession(options: SessionOptions): Promise<Session> {
  const { env, home, resolved, counter, state, telemetry } = await prepare(options, 'createSession');
  let record: SessionRecord | undefined;
  try {
    record = await SessionRecord.create(options.store ?? sessionStoreOf(home), {
      ...(options.id ? { id: options.id } : {}),
      redact: sessionRedactor(options, env),
      cwd: options.cwd ?? process.cwd(),
      name: options.name ?? null,
      language: resolved.turn.language,
      model: options.llm.model,
      ...(options.now ? { now: options.now } : {}),
    });
    const entry: SessionIndexEntry = {
      id: record.id,
      dir: record.dir,
      cwd: record.meta.cwd,
      createdAt: record.meta.createdAt,
      name: record.meta.name === null ? null : record.redact(record.meta.name), // as meta.json has it: masked
    };
    // The home's index lists the home's own sessions; another store lists its own (listSessions).
    if (!options.store) await state.set(INDEX_KEY(record.id), entry);
    if (resolved.pinned) await record.updateMeta({ historyMode: resolved.pinned, pinnedMode: resolved.pinned });
    await recordPins(record, options.pinned ?? [], counter);
    const items = await openItems(state, record.id, options, counter);
    const memory = await record.memory.snapshot();
    return new Session({
      record,
      memory,
      store: state,
      counter,
      options,
      resolved,
      tracker: INITIAL_TRACKER,
      damage: [],
      items,
      resumed: false,
      telemetry,
    });
  } catch (error) {
    await record?.close();
    await state.close();
    throw error;
  }
}

/** Open an existing session by id (or unique prefix): it resumes where it stopped, byte for byte. */
export async function openSession(id: string, options: OpenOptions): Promise<Session> {
  const { env, home, resolved, counter, state, telemetry } = await prepare(options, 'openSession');
  let record: SessionRecord | undefined;
  try {
    const sessions = options.store ?? sessionStoreOf(home);
    const found = await findIn(sessions, id);
    record = await SessionRecord.open(sessions, found.id, {
      redact: sessionRedactor(options, env),
      contextWindow: resolved.turn.contextWindow,
      ...(options.now ? { now: options.now } : {}),
    });
    if (options.pinned) checkPins(record, options.pinned);
    const damage = [...record.damage];
    const stored = await state.get<unknown>(TRACKER_KEY(record.id));
    let tracker = parseTrackerState(stored);
    if (!tracker) {
      if (stored !== undefined) damage.push('reminder tracker state was malformed; started afresh');
      tracker = INITIAL_TRACKER;
    }
    tracker = reconcileTracker(tracker, record.trackerFacts);
    damage.push(...(await repairPairing(record, counter))); // calls and results paired again, wherever a line was lost
    const items = await openItems(state, record.id, options, counter);
    const memory = await record.memory.snapshot();
    return new Session({ record, memory, store: state, counter, options, resolved, tracker, damage, items, resumed: true, telemetry });
  } catch (error) {
    await record?.close();
    await state.close();
    throw error;
  }
}

/** The messages a session is created with pinned: recorded before its first turn (turn 0), each durably. */
async function recordPins(record: SessionRecord, pinned: readonly string[], counter: TokenCounter): Promise<void> {
  for (const content of pinned) {
    const message = { role: 'user' as const, content };
    await record.appendMessage(0, message, counter.message(message), { sync: true, pinned: true });
  }
}

/** Pins given when opening must be those the session was created with (as its log keeps them: masked). */
function checkPins(record: SessionRecord, pinned: readonly string[]): void {
  const view = record.history;
  const had = pinsBetween(view, 0, view.length)
    .filter((i) => view.items[i]!.turn === 0)
    .map((i) => view.items[i]!.message.content);
  const given = pinned.map((text) => record.redact(text));
  if (had.length === given.length && had.every((text, i) => text === given[i])) return;
  throw new ConfigError(
    `openSession: session ${record.id} was created with ${had.length} pinned message${had.length === 1 ? '' : 's'} and options.pinned differs: ` +
      'a session keeps the pins it was created with (start a new session for other ones, or pin a message with prompt(text, { pin: true }))',
  );
}

/**
 * Sessions newest first; `cwd` limits them to one directory. Of the home: those in its
 * index and any in its folders the index misses. With a `store` (e.g. Postgres): that
 * store's sessions only, since the home's index holds the home's sessions only.
 */
export function listSessions(options: StateOptions & { cwd?: string } = {}): Promise<SessionIndexEntry[]> {
  if (options.store) return listStore(options.store, options.cwd);
  return withState(options, async (state, home) => {
    const entries = (await state.entries<SessionIndexEntry>('session:')).map(([, e]) => e);
    // Not in the index: an index from an earlier version, or a lost one.
    const known = new Set(entries.map((e) => e.id));
    for (const s of await sessionStoreOf(home).list())
      if (!known.has(s.id)) entries.push({ id: s.id, dir: s.location, cwd: s.cwd, createdAt: s.createdAt, name: s.name });
    return entries.filter((e) => !options.cwd || e.cwd === options.cwd).sort((a, b) => b.createdAt - a.createdAt);
  });
}

async function listStore(store: SessionStore, cwd: string | undefined): Promise<SessionIndexEntry[]> {
  const found = await store.list(cwd === undefined ? {} : { cwd });
  return found.map((s) => ({ id: s.id, dir: s.location, cwd: s.cwd, createdAt: s.createdAt, name: s.name }));
}

/**
 * `store`: where the sessions are (default: the filesystem store of the home); the home keeps
 * the state store; `warn`: where a damaged state file is reported (default a process warning).
 */
type StateOptions = { home?: string; env?: NodeJS.ProcessEnv; stateStore?: Keyv; store?: SessionStore; warn?: (message: string) => void };

async function withState<T>(options: StateOptions, run: (state: StateStore, home: string) => Promise<T>): Promise<T> {
  const home = options.home ?? defaultHome(options.env ?? process.env);
  const state = await openStateStore(stateStorePath(home), options.stateStore, options.store, options.warn);
  try {
    return await run(state, home);
  } finally {
    await state.close();
  }
}

/** Where a session lives (an id or a unique prefix), without opening it. */
export async function findSession(id: string, options: StateOptions = {}): Promise<string> {
  const home = options.home ?? defaultHome(options.env ?? process.env);
  return (await findIn(options.store ?? sessionStoreOf(home), id)).location;
}

/**
 * A session (an id or a unique prefix) to read without opening it: no lease taken, so it
 * works while another process or instance runs the session (`sessions show`, `viz`).
 */
export async function readSession(id: string, options: StateOptions = {}): Promise<SessionReader> {
  const home = options.home ?? defaultHome(options.env ?? process.env);
  const sessions = options.store ?? sessionStoreOf(home);
  const found = await findIn(sessions, id);
  try {
    return await sessions.read(found.id);
  } catch (error) {
    if (error instanceof SessionNotFoundError) throw new ConfigError(error.message); // removed meanwhile
    throw error;
  }
}

/** Delete a session: its storage and everything the state store holds for it. Refused while it is in use. */
export function removeSession(id: string, options: StateOptions = {}): Promise<string> {
  return withState(options, async (state, home) => {
    const sessions = options.store ?? sessionStoreOf(home);
    const found = await findIn(sessions, id);
    await sessions.remove(found.id);
    await state.delete(INDEX_KEY(found.id));
    await state.delete(TRACKER_KEY(found.id));
    await removeItemMemory(state, { kind: 'session', id: found.id });
    return found.location;
  });
}

/** The session store of a home: the filesystem store (the default). */
function sessionStoreOf(home: string): SessionStore {
  return fileSessionStore({ home });
}

/** The session an id or a unique prefix names; not found or ambiguous is a ConfigError (the CLI's usage errors). */
async function findIn(sessions: SessionStore, id: string): Promise<SessionSummary> {
  try {
    return await sessions.find(id);
  } catch (error) {
    // The cause stays: a host loop creates the session it names when there is none (hostLoop.ts).
    if (error instanceof SessionNotFoundError) throw new ConfigError(error.message, { cause: error });
    throw error;
  }
}

async function openItems(
  state: StateStore,
  sessionId: string,
  options: OpenOptions,
  counter: TokenCounter,
): Promise<PersistentItemMemory | null> {
  const config = options.itemMemory;
  if (!config) return null;
  if (config.scope === 'user' && !config.userId) throw new ConfigError('itemMemory: scope "user" needs a userId');
  let owner: ItemOwner;
  try {
    owner = itemOwner(config.scope === 'user' ? { kind: 'user', id: config.userId! } : { kind: 'session', id: sessionId });
  } catch (error) {
    throw new ConfigError(`itemMemory: ${(error as Error).message}`);
  }
  const { inject: _inject, scope: _scope, userId: _user, ...limits } = config;
  return openItemMemory(state, owner, { ...limits, countTokens: (t) => counter.text(t), ...(options.now ? { now: options.now } : {}) });
}

/** The model's secrets, the host's and $OPENAI_API_KEY: never written or reported. */
function sessionRedactor(options: OpenOptions, env: NodeJS.ProcessEnv): Redact {
  return redactor([...(options.llm.secrets ?? []), ...(options.secrets ?? []), env.OPENAI_API_KEY]);
}
