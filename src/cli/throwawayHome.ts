/**
 * --no-session: a throwaway run. The configuration is read as usual (flags, environment,
 * <home>/config.json), but sessions go to a temporary home that is removed when the
 * command ends, so nothing is left in the sessions home, nor anywhere else on disk.
 * A process killed outright (SIGKILL) cannot remove it: the folder's name carries its
 * owner's pid, and the next chat or run removes the folders of owners no longer alive.
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flags } from './cliIO.js';
import { loadConfig, type CliConfig } from './config.js';
import { UsageError } from './usageError.js';

export interface CommandConfig {
  config: CliConfig;
  /** Set for --no-session: the temporary home, removed by `done`. */
  throwaway: string | null;
  /** Close the database, if any, and remove the temporary home, if any. */
  done(): Promise<void>;
  /**
   * Send SIGINT, SIGTERM and SIGHUP to `handler` until `done` has finished: a closing
   * terminal sends more than one hang-up, and the second must not cut the cleanup short.
   */
  onSignals(handler: SignalHandler): void;
}

type SignalHandler = (signal: NodeJS.Signals) => void;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const PREFIX = 'workmem-throwaway-';
/** A temporary home's name: the prefix, its owner's pid, mkdtemp's random suffix. */
const OWNED = new RegExp(`^${PREFIX}(\\d+)-`);

function signalRoute(): { onSignals(handler: SignalHandler): void; release(): void } {
  const handlers: SignalHandler[] = [];
  const route = (signal: NodeJS.Signals): void => {
    for (const handler of handlers) handler(signal);
  };
  return {
    onSignals(handler) {
      if (!handlers.length) for (const signal of SIGNALS) process.on(signal, route);
      handlers.push(handler);
    },
    release() {
      if (handlers.length) for (const signal of SIGNALS) process.off(signal, route);
      handlers.length = 0;
    },
  };
}

/** The configuration a chat or run command works with, throwaway or not. */
export function commandConfig(flags: Flags, env: NodeJS.ProcessEnv): CommandConfig {
  sweepThrowawayHomes(tmpdir());
  const signals = signalRoute();
  if (!flags['no-session']) {
    const config = loadConfig(flags, env);
    const done = async (): Promise<void> => {
      try {
        await config.store?.close();
      } finally {
        signals.release();
      }
    };
    return { config, throwaway: null, done, onSignals: signals.onSignals };
  }
  for (const flag of ['session', 'continue', 'database-url', 'database-url-file', 'inspect', 'inspect-port'])
    if (flags[flag] !== undefined) throw new UsageError(`--no-session keeps nothing, so it does not go with --${flag}`);
  // A database named in the environment is not used: the throwaway session lives in the temporary home.
  const config = loadConfig(flags, { ...env, WORKMEM_DATABASE_URL: '' });
  const home = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
  // Should the command end without reaching `done` (an uncaught error), the process's exit still removes it.
  const atExit = (): void => rmSync(home, { recursive: true, force: true });
  process.once('exit', atExit);
  return {
    config: { ...config, home },
    throwaway: home,
    done: async () => {
      try {
        await rm(home, { recursive: true, force: true, maxRetries: 3 });
        process.off('exit', atExit);
      } finally {
        signals.release();
      }
    },
    onSignals: signals.onSignals,
  };
}

/**
 * Remove the temporary homes in `dir` left by throwaway runs that were killed: those
 * named with the pid of a process no longer alive, and owned by this user (another's are
 * not ours to judge, nor to remove). A pid taken again by a new process keeps its folder
 * until a later sweep: never a live run's home removed.
 */
function sweepThrowawayHomes(dir: string): void {
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
