/**
 * Confines paths the model gives us to one directory (the session's working-memory/).
 * We refuse rather than normalise anything ambiguous: `..`, absolute paths, `~`,
 * backslashes, NUL and control characters, percent-encoded separators or dots,
 * symlinks anywhere on the way, and hard-linked files (which could alias a file outside).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { PathRefusedError } from '../errors/pathRefused.js';
import { writeFileAtomic } from './atomicWrite.js';
import type { DiskIO } from './diskIO.js';

export { PathRefusedError };

const MAX_PATH = 1024;
const MAX_SEGMENT_BYTES = 255;
const WINDOWS_DEVICES = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

export interface ResolvedPath {
  /** Absolute path inside the root. */
  abs: string;
  /** Path relative to the root, with forward slashes. */
  rel: string;
  /** lstat of the target, or null when it does not exist yet. */
  stat: Stats | null;
}

/**
 * Resolve `input` inside `root`. `prefix` (e.g. "working-memory/") is accepted and
 * stripped, so the model may name files either way.
 */
export function resolveInside(root: string, input: unknown, prefix = '', options: { reportFinalLink?: boolean } = {}): ResolvedPath {
  const segments = confinedSegments(input, prefix);

  // Walk from the root: any symlink on the way (or at the end) is refused.
  let abs = root;
  let stat: Stats | null = null;
  for (let i = 0; i < segments.length; i++) {
    abs = join(abs, segments[i]!);
    stat = lstatOrNull(abs);
    if (stat === null) {
      stat = null;
      break;
    }
    // `reportFinalLink`: a link at the end is returned (its lstat says so) for the caller to refuse in its own words.
    const reported = options.reportFinalLink === true && i === segments.length - 1;
    if (stat.isSymbolicLink() && !reported) throw new PathRefusedError(`path ${show(input as string)} goes through a symlink; refused`);
    if (i < segments.length - 1 && !stat.isDirectory()) {
      throw new PathRefusedError(`${show(segments.slice(0, i + 1).join('/'))} is not a directory`);
    }
  }
  if (stat === null) abs = join(root, ...segments);
  return { abs, rel: segments.join('/'), stat };
}

/**
 * The segments of a path the model gives, checked without touching any storage: every
 * refusal of resolveInside but the links (a store without a filesystem has none).
 */
export function confinedSegments(input: unknown, prefix = ''): string[] {
  if (typeof input !== 'string') throw new PathRefusedError(`path must be a string, got ${typeof input}`);
  if (input.length === 0) throw new PathRefusedError('path is empty');
  if (input.length > MAX_PATH) throw new PathRefusedError(`path is longer than ${MAX_PATH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(input)) throw new PathRefusedError('path contains a NUL or control character');
  if (input.includes('\\')) throw new PathRefusedError(`path ${show(input)} contains a backslash; use forward slashes`);
  if (input.startsWith('/') || /^[a-zA-Z]:/.test(input)) {
    throw new PathRefusedError(`absolute path ${show(input)} refused; paths are relative to working-memory/`);
  }
  if (input.startsWith('~')) throw new PathRefusedError(`path ${show(input)} starting with ~ refused`);

  let rest = input.replace(/^(\.\/)+/, '');
  if (prefix && (rest === prefix.replace(/\/$/, '') || rest.startsWith(prefix))) rest = rest.slice(prefix.length);
  const segments: string[] = [];
  for (const segment of rest.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') throw new PathRefusedError(`path ${show(input)} leaves working-memory/ ('..' refused)`);
    if (/%(2e|2f|5c|00)/i.test(segment)) {
      throw new PathRefusedError(`path ${show(input)} contains a percent-encoded dot, slash or NUL`);
    }
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      throw new PathRefusedError(`a path segment is longer than ${MAX_SEGMENT_BYTES} bytes`);
    }
    if (WINDOWS_DEVICES.test(segment)) throw new PathRefusedError(`${show(segment)} is a reserved device name`);
    segments.push(segment);
  }
  if (segments.length === 0) throw new PathRefusedError(`path ${show(input)} names the working-memory directory itself`);
  return segments;
}

/** A resolved path that must be an existing, singly linked regular file. */
export function requireRegularFile(resolved: ResolvedPath, input: string): Stats {
  const { stat } = resolved;
  if (!stat) throw new PathRefusedError(`file not found: ${show(input)}`);
  if (stat.isDirectory()) throw new PathRefusedError(`${show(input)} is a directory, not a file`);
  if (!stat.isFile()) throw new PathRefusedError(`${show(input)} is not a regular file`);
  if (stat.nlink > 1) throw new PathRefusedError(`${show(input)} is hard-linked elsewhere; refused`);
  return stat;
}

/**
 * Open a resolved regular file for reading, safe against a second process swapping a folder
 * on the way for a symlink after resolveInside looked: the last step is not followed
 * (O_NOFOLLOW), a FIFO cannot block the open (O_NONBLOCK), and before a byte is read the
 * descriptor itself must be a singly linked regular file whose real path is inside `root`
 * (Linux: /proc/self/fd; elsewhere realpath plus the same device and inode).
 */
export function openInside(root: string, resolved: ResolvedPath, input: string): { fd: number; stat: Stats } {
  let fd: number;
  try {
    fd = openSync(resolved.abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new PathRefusedError(`path ${show(input)} is a symlink; refused`);
    if (code === 'ENOENT') throw new PathRefusedError(`file not found: ${show(input)}`);
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    requireRegularFile({ ...resolved, stat }, input);
    if (!isInside(realpathSync(root), fd, resolved.abs, stat)) {
      throw new PathRefusedError(`path ${show(input)} led outside working-memory/ while it was opened; refused`);
    }
    return { fd, stat };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * Write a resolved file atomically with its folder pinned: the folder is opened without
 * following a last-step symlink, the descriptor's real path must be inside `root`, and the
 * rename goes through /proc/self/fd/<fd>, which names that very folder whatever is swapped
 * into its path meanwhile. Without /proc (not Linux) the write takes the plain path.
 */
export async function writeInside(
  root: string,
  resolved: ResolvedPath,
  input: string,
  data: string,
  options: { io: DiskIO; tmpDir?: string },
): Promise<void> {
  let fd: number;
  try {
    fd = openSync(dirname(resolved.abs), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw new PathRefusedError(`the folder of ${show(input)} is not a plain folder; refused`);
    throw error;
  }
  try {
    let real: string;
    try {
      real = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return await writeFileAtomic(resolved.abs, data, options);
    }
    const realRoot = realpathSync(root);
    if (real !== realRoot && !real.startsWith(realRoot + sep)) {
      throw new PathRefusedError(`path ${show(input)} led outside working-memory/ while it was written; refused`);
    }
    await writeFileAtomic(join(`/proc/self/fd/${fd}`, basename(resolved.abs)), data, options);
  } finally {
    closeSync(fd);
  }
}

/** The whole content of a descriptor opened by openInside, `size` bytes as fstat said. */
export function readOpened(fd: number, size: number): string {
  const buffer = Buffer.allocUnsafe(size);
  let n = 0;
  while (n < size) {
    const got = readSync(fd, buffer, n, size - n, n);
    if (got === 0) break;
    n += got;
  }
  return buffer.toString('utf8', 0, n);
}

function isInside(realRoot: string, fd: number, abs: string, stat: Stats): boolean {
  let real: string;
  try {
    real = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    // No /proc: the path's real location must be the very file we hold.
    try {
      real = realpathSync(abs);
      const now = statSync(real);
      if (now.dev !== stat.dev || now.ino !== stat.ino) return false;
    } catch {
      return false;
    }
  }
  return real.startsWith(realRoot + sep);
}

/** lstat, or null when nothing is there. */
export function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function show(value: string): string {
  return JSON.stringify(value.length > 120 ? `${value.slice(0, 117)}...` : value);
}
