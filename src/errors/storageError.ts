/**
 * A failed write says what failed and why in words a user can act on ("the disk is full
 * (ENOSPC) while writing messages.jsonl"), keeping the errno code so callers can tell a
 * storage fault from a bug (toTurnError reports it as kind "storage").
 */
const CAUSES: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EACCES: 'permission denied',
  EPERM: 'the operation is not permitted',
  EROFS: 'the file system is read-only',
  EIO: 'the disk reported an I/O error',
  EMFILE: 'too many files are open',
  ENFILE: 'too many files are open system-wide',
};

export class StorageError extends Error {
  override name = 'StorageError';
  constructor(
    message: string,
    readonly code: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `error` as a StorageError naming `what` was being written, if it is a storage fault. */
export function storageError(error: unknown, what: string): unknown {
  if (error instanceof StorageError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (!code || !(code in CAUSES)) return error;
  return new StorageError(`${CAUSES[code]} (${code}) while writing ${what}`, code, { cause: error });
}

export function isStorageFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code in CAUSES;
}
