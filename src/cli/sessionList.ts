/**
 * The sessions of a directory (or of all), as `sessions list` and chat's /sessions show
 * them: each read from its meta, titled by the name it was given or else its first prompt.
 * Read without a lease, so a session running elsewhere is listed too.
 */
import { listSessions, readSession } from '../session/index.js';
import type { SessionMeta } from '../storage/sessionMeta.js';
import type { SessionReader, SessionStore } from '../storage/sessionStore.js';

export interface ListedSession {
  id: string;
  /** When it last changed (its creation when the meta cannot be read). */
  updatedAt: number;
  /** null: the meta could not be read (the session was removed meanwhile, or is damaged). */
  meta: SessionMeta | null;
  /** The name given, else the first prompt, else ''. Not yet masked. */
  title: string;
}

export async function listedSessions(options: { home: string; store?: SessionStore; cwd?: string }): Promise<ListedSession[]> {
  const where = { home: options.home, ...(options.store ? { store: options.store } : {}) };
  const listed: ListedSession[] = [];
  for (const s of await listSessions(options)) {
    const meta = await readSession(s.id, where).then(metaOf, () => null);
    listed.push({ id: s.id, updatedAt: meta?.updatedAt ?? s.createdAt, meta, title: meta?.name ?? meta?.title ?? s.name ?? '' });
  }
  return listed;
}

export async function metaOf(session: SessionReader): Promise<SessionMeta | null> {
  const read = await session.readMeta();
  return read.ok ? read.meta : null;
}

/** A time as the session lists show it: 2024-05-01 12:34 (UTC). */
export function shownTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
}
