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
      // Megabytes (a long conversation's archive) a slice at a time: one encoding and one
      // copy to a disk thread of it all would hold the loop for tens of milliseconds.
      let at = 0;
      do {
        const end = sliceEnd(data, at);
        // Bytes copied: a view would take its whole buffer along to a disk thread (postMessage clones all of it).
        const slice =
          typeof data === 'string'
            ? Buffer.from(data.slice(at, end))
            : end - at === data.length
              ? data
              : new Uint8Array(data.subarray(at, end));
        await options.io.write(fd, slice, durable && end === data.length ? { sync: 'all' } : {});
        at = end;
      } while (at < data.length);
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

/** Characters (or bytes) written at a time: about a millisecond's encoding. */
const SLICE = 1 << 18;

/** Where the slice that starts at `at` ends: never between the two halves of a surrogate pair. */
function sliceEnd(data: string | Uint8Array, at: number): number {
  const end = Math.min(data.length, at + SLICE);
  if (typeof data !== 'string' || end === data.length) return end;
  const unit = data.charCodeAt(end - 1);
  return unit >= 0xd800 && unit <= 0xdbff ? end - 1 : end;
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
