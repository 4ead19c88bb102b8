/**
 * The default state store: one small JSON file per key under `<home>/state/`, holding
 * `{ key, value }`. Plain files, so an install needs no native addon.
 *
 * Several processes may share a home (different sessions at once): each key is its own
 * file replaced by an atomic rename, so a writer never tears another's key and a reader
 * sees the old value or the new, never a mix; the last writer of one key wins. Temp files
 * go in `state/.tmp/`, never listed as entries; those a killed writer left are swept
 * when old (never a fresh one: it may be another process's write in progress).
 *
 * Durability by key kind: `session:` (the index, rebuilt from the session folders) and
 * `tracker:` (reconciled from the log on open, written at every request) are replaced
 * without fsync, which survives a killed process but maybe not a power cut; everything
 * else (item memory, which exists nowhere else) is fsynced.
 *
 * File names: the key's UTF-8 bytes, with only `a-z 0-9 - _ .` kept and every other
 * byte as `%HH` (upper-case hex), so a name is safe on Windows and macOS (no `: * ? < >
 * | " \ /`, no device name such as `con`, no leading dot, and no two keys that differ
 * only in case can meet on a case-insensitive disk). A name that would be too long is
 * cut and ends in `~<hash>`; the key inside the file is the truth either way.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { DIR_MODE, TEMP_DIR, writeFileAtomic } from './atomicWrite.js';
import { diskIOFor, type DiskIO } from './diskIO.js';
import type { StateStore } from './stateStore.js';
import { storageError } from '../errors/storageError.js';

/** Keys whose value can be rebuilt from the session files: written without fsync. */
const REBUILDABLE = ['session:', 'tracker:'];
const SUFFIX = '.json';
/** Bytes of a name before the suffix; well under the 255 of common filesystems. */
const MAX_NAME = 200;
const HASHED = /~[0-9a-f]{16}$/;
/** A temp file older than this was left by a killed writer (a write takes milliseconds). */
const STALE_TMP_MS = 10 * 60_000;

export interface FileStateStoreOptions {
  /** Where a damaged file is reported (it is skipped); default a process warning. */
  report?: (message: string) => void;
}

export function fileStateStore(dir: string, options: FileStateStoreOptions = {}): StateStore {
  const report = options.report ?? ((message: string) => process.emitWarning(`workmem: ${message}`));
  const tmpDir = join(dir, TEMP_DIR);
  let swept = false;
  /** How writes reach the disk, known once the folder exists (diskIO.ts). */
  let io: DiskIO | null = null;

  /** The stored value, or undefined when missing; a damaged file is reported and treated as missing. */
  const read = (name: string, key?: string): { key: string; value: unknown } | undefined => {
    let text: string;
    try {
      text = readFileSync(join(dir, name), 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined; // gone, or deleted by another process meanwhile
      report(`state file ${name} cannot be read (${code ?? (error as Error).message}); skipped`);
      return undefined;
    }
    let entry: unknown;
    try {
      entry = JSON.parse(text);
    } catch {
      report(`state file ${name} is not valid JSON (torn or edited); skipped`);
      return undefined;
    }
    const e = entry as { key?: unknown; value?: unknown } | null;
    if (typeof e !== 'object' || e === null || Array.isArray(e) || typeof e.key !== 'string' || !('value' in e)) {
      report(`state file ${name} is not a workmem state entry; skipped`);
      return undefined;
    }
    if (key !== undefined && e.key !== key) return undefined; // a cut name shared by another key
    return { key: e.key, value: e.value };
  };

  return {
    path: dir,
    get: async <T>(key: string) => read(fileName(key), key)?.value as T | undefined,
    set: async (key, value) => {
      try {
        mkdirSync(dir, { recursive: true, mode: DIR_MODE });
      } catch (error) {
        throw storageError(error, 'state/');
      }
      if (!swept) {
        swept = true;
        sweepStale(tmpDir);
      }
      const durable = !REBUILDABLE.some((p) => key.startsWith(p));
      io ??= diskIOFor(dir);
      await writeFileAtomic(join(dir, fileName(key)), JSON.stringify({ key, value }), { durable, tmpDir, io });
    },
    delete: async (key) => {
      try {
        unlinkSync(join(dir, fileName(key)));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw storageError(error, fileName(key));
      }
    },
    entries: async <T>(prefix: string) => {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw storageError(error, 'state/');
      }
      const out: [string, T][] = [];
      for (const name of names.sort()) {
        if (!mightHold(name, prefix)) continue;
        const entry = read(name);
        if (entry && entry.key.startsWith(prefix) && name === fileName(entry.key)) out.push([entry.key, entry.value as T]);
      }
      return out;
    },
    close: async () => {},
  };
}

/** Remove old temp files only: another process sharing the home may be writing a fresh one. */
function sweepStale(tmpDir: string): void {
  let names: string[];
  try {
    names = readdirSync(tmpDir);
  } catch {
    return; // no .tmp/ yet
  }
  const before = Date.now() - STALE_TMP_MS;
  for (const name of names) {
    try {
      const path = join(tmpDir, name);
      if (name.endsWith('.tmp') && statSync(path).mtimeMs < before) unlinkSync(path);
    } catch {
      // gone already, or not ours to remove: harmless either way
    }
  }
}

/** The file name of a key (see the doc block). */
export function fileName(key: string): string {
  let name = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(byte);
    name += /[a-z0-9_.-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  // No hidden file, and no Windows device name (con, nul, com1, …), even with a suffix.
  if (name.startsWith('.') || /^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/.test(name))
    name = `%${name.charCodeAt(0).toString(16).toUpperCase()}${name.slice(1)}`;
  if (name.length > MAX_NAME) {
    let cut = MAX_NAME - 17;
    const escape = name.lastIndexOf('%', cut - 1);
    if (escape > cut - 3) cut = escape; // never split a %HH
    name = `${name.slice(0, cut)}~${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
  }
  return name + SUFFIX;
}

/** Whether the file `name` can hold a key that starts with `prefix`, judged by its name alone. */
function mightHold(name: string, prefix: string): boolean {
  if (!name.endsWith(SUFFIX) || name.startsWith('.')) return false; // .tmp/ and anything not ours
  const base = name.slice(0, -SUFFIX.length);
  if (HASHED.test(base)) return true; // a cut name: the key inside decides
  try {
    return decodeURIComponent(base).startsWith(prefix);
  } catch {
    return false; // not a name this store makes
  }
}
