/**
 * Errors every session store throws alike, so callers need not know which store they use.
 * SessionInUseError lives with the lock file that first needed it and is re-exported here.
 */
export { SessionInUseError } from './sessionLock.js';

/** An append named a sequence number that is not the next one: another writer got there first, or a caller bug. */
export class SequenceConflictError extends Error {
  override name = 'SequenceConflictError';
  constructor(
    readonly sessionId: string,
    readonly expectedSeq: number,
    readonly nextSeq: number,
  ) {
    super(`session ${sessionId}: an append expected sequence number ${expectedSeq}, but the next one is ${nextSeq}; nothing was written`);
  }
}

/** The lease was taken over by another holder: this one must not write again. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** No session has this id (or prefix), or more than one starts with it. */
export class SessionNotFoundError extends Error {
  override name = 'SessionNotFoundError';
}
