/**
 * --no-session: a throwaway run. The configuration is read as usual (flags, environment,
 * <home>/config.json), but sessions go to a temporary home that is removed when the
 * command ends, so nothing is left in the sessions home, nor anywhere else on disk.
 */
import { mkdtempSync } from 'node:fs';
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
}

/** The configuration a chat or run command works with, throwaway or not. */
export function commandConfig(flags: Flags, env: NodeJS.ProcessEnv): CommandConfig {
  if (!flags['no-session']) {
    const config = loadConfig(flags, env);
    return { config, throwaway: null, done: async () => void (await config.store?.close()) };
  }
  for (const flag of ['session', 'continue', 'database-url', 'inspect', 'inspect-port'])
    if (flags[flag] !== undefined) throw new UsageError(`--no-session keeps nothing, so it does not go with --${flag}`);
  // A database named in the environment is not used: the throwaway session lives in the temporary home.
  const config = loadConfig(flags, { ...env, WORKMEM_DATABASE_URL: '' });
  const home = mkdtempSync(join(tmpdir(), 'workmem-throwaway-'));
  return {
    config: { ...config, home },
    throwaway: home,
    done: () => rm(home, { recursive: true, force: true, maxRetries: 3 }),
  };
}
