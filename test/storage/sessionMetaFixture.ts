/** A session's first meta for tests and the reliability children (no vitest here: plain node runs it). */
import type { SessionMeta } from '../../src/storage/sessionMeta.js';

export function metaFor(id: string, cwd = '/work/project', at = 1_700_000_000_000): SessionMeta {
  return {
    format: 1,
    id,
    name: null,
    title: null,
    cwd,
    createdAt: at,
    updatedAt: at,
    messageCount: 0,
    turns: 0,
    historyMode: 'phase1',
    pinnedMode: null,
    memoryWrites: 0,
    calibration: 0,
    model: null,
    language: 'en',
  };
}
