/**
 * Crash-safe small-file writes: a reader sees the old content or the new, never a torn
 * mix. tmp file + fsync + rename + fsync of the directory. The tmp file goes in the
 * caller's `tmpDir` (a session keeps its own .tmp/, outside working-memory/, so no name
 * the model chooses is ever one of ours) or else beside the file; either way on the same
 * filesystem, so the rename is atomic.
 * The metadata calls (open, rename) stay on the event loop: they change cached entries and
 * take microseconds; the write and the syncs, which can wait for the disk, go through DiskIO.
 */
import { closeSync, mkdirSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { storageError } from '../errors/storageError.js';
import type { DiskIO } from './diskIO.js';

export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;
/** A session's folder for temporary files, beside working-memory/ where the model cannot name anything. */
export const TEMP_DIR = '.tmp';

/**
 * Replace `path` with `data`, the write and its syncs through `io` (off the event loop on a
 * disk). `durable: false` keeps the atomic replace but skips the syncs: for files that can
 * be rebuilt from others (meta.json from the log), a crash may leave the previous version,
 * never a torn one.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: { io: DiskIO; durable?: boolean; tmpDir?: string },
): Promise<void> {
  const durable = options.durable !== false;
  const dir = dirname(path);
  const tmp = join(options.tmpDir ?? dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number;
  try {
    fd = openTmp(tmp, options.tmpDir);
  } catch (error) {
    throw storageError(error, shortPath(path));
  }
  try {
    try {
      await options.io.write(fd, typeof data === 'string' ? Buffer.from(data) : data, durable ? { sync: 'all' } : {});
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
  if (durable) await syncDir(dir, options.io);
}

function openTmp(tmp: string, tmpDir: string | undefined): number {
  try {
    return openSync(tmp, 'wx', FILE_MODE);
  } catch (error) {
    if (!tmpDir || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(tmpDir, { recursive: true, mode: DIR_MODE }); // made on first use
    return openSync(tmp, 'wx', FILE_MODE);
  }
}

/** `…/working-memory/overview.md` → `working-memory/overview.md`: enough to say which file. */
function shortPath(path: string): string {
  const parts = path.split(/[/\\]/);
  const at = parts.lastIndexOf('working-memory');
  return at >= 0 ? parts.slice(at).join('/') : parts.slice(-1)[0]!;
}

/** fsync a directory through `io`, so that a rename or a new entry survives a crash. */
async function syncDir(dir: string, io: DiskIO): Promise<void> {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    return;
  }
  try {
    await io.sync(fd, 'all');
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  } finally {
    closeSync(fd);
  }
}
