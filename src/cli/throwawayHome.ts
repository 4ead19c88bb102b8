/**
 * --no-session: a throwaway run. The configuration is read as usual (flags, environment,
 * <home>/config.json), but sessions go to a temporary home that is removed when the
 * command ends, so nothing is left in the sessions home, nor anywhere else on disk.
 * A process killed outright (SIGKILL) cannot remove it: the next chat or run removes it
 * (../storage/temporaryHome.ts).
 */
import { removeTemporaryHome, sweepTemporaryHomes, temporaryHome } from '../storage/temporaryHome.js';
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
  sweepTemporaryHomes();
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
  // Should the command end without reaching `done` (an uncaught error), the process's exit still removes it.
  const home = temporaryHome('throwaway');
  return {
    config: { ...config, home },
    throwaway: home,
    done: async () => {
      try {
        removeTemporaryHome(home);
      } finally {
        signals.release();
      }
    },
    onSignals: signals.onSignals,
  };
}
