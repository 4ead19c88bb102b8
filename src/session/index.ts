/** The session API in one import: the registry, the Session facade and their shapes. */
export { createSession, openSession, listSessions, findSession, readSession, removeSession } from './registry.js';
export { Session } from './session.js';
export type {
  SessionOptions,
  OpenOptions,
  TurnResult,
  SessionState,
  BackgroundState,
  SessionIndexEntry,
  ItemMemoryConfig,
} from './options.js';
