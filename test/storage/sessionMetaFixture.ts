/** A session's first meta for tests and the reliability children (no vitest here: plain node runs it). */
import { newSessionMeta, type SessionMeta } from '../../src/storage/sessionMeta.js';

export function metaFor(id: string, cwd = '/work/project', at = 1_700_000_000_000): SessionMeta {
  return newSessionMeta({ id, cwd, at });
}
