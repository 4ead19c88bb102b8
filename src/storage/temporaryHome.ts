/**
 * Temporary homes: the folders in the temporary directory where a throwaway chat or run,
 * the demo and the eval's sessions live while the command runs. Each is removed when its
 * work ends and, should that not come (an uncaught error, process.exit), when the process
 * exits. A process killed outright (SIGKILL) cannot remove its own: a home's name carries
 * its owner's pid, and the next command that makes one of that kind removes the homes of
 * owners no longer alive. They can hold a conversation's text: none is left behind for good.
 */
import { lstatSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** The kinds of temporary home, each a name prefix of its own in the temporary directory. */
const KINDS = ['throwaway', 'demo', 'eval'] as const;
export type TemporaryHomeKind = (typeof KINDS)[number];

const prefix = (kind: TemporaryHomeKind): string => `workmem-${kind}-`;
/** A temporary home's name: the kind's prefix, its owner's pid, mkdtemp's random suffix. */
const OWNED = new RegExp(`^workmem-(?:${KINDS.join('|')})-(\\d+)-`);

/**
 * A new temporary home of `kind` in `dir` (default the temporary directory), after removing
 * the homes whose owners died. It is removed at this process's exit unless
 * `removeTemporaryHome` removed it before.
 */
export function temporaryHome(kind: TemporaryHomeKind, dir = tmpdir()): string {
  sweepTemporaryHomes(dir);
  const home = mkdtempSync(join(dir, `${prefix(kind)}${process.pid}-`));
  const atExit = (): void => rmSync(home, { recursive: true, force: true });
  process.once('exit', atExit);
  exitHooks.set(home, atExit);
  return home;
}

const exitHooks = new Map<string, () => void>();

/** Remove a home `temporaryHome` made, now. */
export function removeTemporaryHome(home: string): void {
  rmSync(home, { recursive: true, force: true, maxRetries: 3 });
  const hook = exitHooks.get(home);
  if (hook) process.off('exit', hook);
  exitHooks.delete(home);
}

/**
 * Keep a home `temporaryHome` made, for the user to open (an eval conversation whose turns
 * failed): renamed out of the kind's swept names (`workmem-<kind>-kept-…`) and no longer
 * removed at exit. Returns its new path.
 */
export function keepTemporaryHome(home: string): string {
  const owned = OWNED.exec(basename(home));
  const kept = join(
    dirname(home),
    basename(home).replace(OWNED, (_, pid: string) => `${owned![0].slice(0, -pid.length - 1)}kept-${pid}-`),
  );
  renameSync(home, kept);
  const hook = exitHooks.get(home);
  if (hook) process.off('exit', hook);
  exitHooks.delete(home);
  return kept;
}

/**
 * Remove the temporary homes in `dir` left by processes that were killed: those named
 * with the pid of a process no longer alive, and owned by this user (another's are not
 * ours to judge, nor to remove). A pid taken again by a new process keeps its folder
 * until a later sweep: never a live run's home removed.
 */
export function sweepTemporaryHomes(dir = tmpdir()): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // no temporary directory to sweep: nothing was left there either
  }
  for (const name of names) {
    const owner = OWNED.exec(name);
    if (!owner || alive(Number(owner[1]))) continue;
    const path = join(dir, name);
    try {
      const stat = lstatSync(path);
      if (stat.isDirectory() && stat.uid === process.getuid?.()) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed meanwhile by another sweep, or not ours to remove: left alone.
    }
  }
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // alive, another user's
  }
}
