/**
 * vitest's global setup: the run's temporary files (session homes, PostgreSQL clusters, the
 * pack test's project) go to a folder of their own on a tmpfs (/dev/shm) when there is one
 * with room for them and TMPDIR does not say otherwise. Every session write ends in fdatasync; on a disk shared
 * with other work that wait was seconds per file, on a tmpfs it returns at once, and the code
 * that calls it runs the same. The folder, and whatever a test left in it, goes at the end.
 */
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TMPFS = 0x01021994; // statfs(2)'s TMPFS_MAGIC
const SHM = '/dev/shm';
/** What a whole run may write there (the pack test installs a project): a container's small /dev/shm is passed over. */
const NEEDED_BYTES = 2 * 1024 ** 3;

function onTmpfs(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    const fs = statfsSync(dir);
    return fs.type === TMPFS && fs.bavail * fs.bsize >= NEEDED_BYTES;
  } catch {
    return false;
  }
}

export default function setup(): (() => void) | void {
  if (process.env.TMPDIR || !onTmpfs(SHM)) return;
  // What outlives a run (an agent installed from npm once per version) stays in the machine's own temporary folder.
  process.env.WORKMEM_TEST_LASTING_TMPDIR = tmpdir();
  const dir = mkdtempSync(join(SHM, 'workmem-tests-'));
  // Others may pass through, as the postgres user must to reach the cluster a test starts in it.
  chmodSync(dir, 0o711);
  // The workers and every child they start inherit it: the workers start after the global setup.
  process.env.TMPDIR = dir;
  return () => {
    delete process.env.TMPDIR;
    delete process.env.WORKMEM_TEST_LASTING_TMPDIR;
    rmSync(dir, { recursive: true, force: true });
  };
}
