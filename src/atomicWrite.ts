/**
 * Crash-safe small-file writes: a reader sees the old content or the new, never a torn
 * mix. tmp file in the same directory + fsync + rename + fsync of the directory.
 * Synchronous on purpose: for files of a few KB it is faster than the async path
 * (0.4 ms vs 0.7 ms measured, see NOTES.md).
 */
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { storageError } from './storageError.js';

export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;
/** The names of our temporary files, for clearing those a crash left behind. */
export const TEMP_FILE = /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/;

/**
 * `durable: false` keeps the atomic replace but skips the fsyncs: for files that can be
 * rebuilt from others (meta.json from the log), a crash may leave the previous version,
 * never a torn one.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: { durable?: boolean } = {}): void {
  const durable = options.durable !== false;
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', FILE_MODE);
  } catch (error) {
    throw storageError(error, shortPath(path));
  }
  try {
    try {
      writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
      if (durable) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (error) {
    try {
      unlinkSync(tmp);
    } catch {
      /* the tmp file is already gone */
    }
    throw storageError(error, shortPath(path));
  }
  if (durable) syncDir(dir);
}

/** `…/working-memory/overview.md` → `working-memory/overview.md`: enough to say which file. */
function shortPath(path: string): string {
  const parts = path.split(/[/\\]/);
  const at = parts.lastIndexOf('working-memory');
  return at >= 0 ? parts.slice(at).join('/') : parts.slice(-1)[0]!;
}

/** fsync a directory so a rename or a new entry survives a crash. */
export function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
