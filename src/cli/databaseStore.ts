/**
 * --database-url, --database-url-file or WORKMEM_DATABASE_URL (in that order): sessions
 * kept in PostgreSQL instead of the home's folders. The URL's password is a secret: an
 * error shows the URL with its user:password masked, and the session's redactor is given
 * the password. A flag puts it on the command line, where other local users can read it:
 * the file and the environment keep it off (processTitle.ts hides the flag's as it can).
 */
import { readFileSync } from 'node:fs';
import { userinfoSecrets, withoutUserinfo } from '../llm/baseUrl.js';
import type { SessionStore } from '../storage/sessionStore.js';
import { postgresStore } from '../storage/postgres/postgresStore.js';
import type { Flags } from './cliIO.js';
import { UsageError } from './usageError.js';

export interface DatabaseChoice {
  /** The connection string, as given. */
  url: string;
  /** What of it must never be shown (the password, user:password). */
  secrets: string[];
}

/** The database the flags or, failing them, the environment name; undefined for the filesystem store. */
export function databaseOf(flags: Flags, env: NodeJS.ProcessEnv): DatabaseChoice | undefined {
  const given = typeof flags['database-url'] === 'string';
  const file = typeof flags['database-url-file'] === 'string' ? String(flags['database-url-file']) : undefined;
  if (given && file !== undefined) throw new UsageError('give --database-url or --database-url-file, not both');
  const [source, raw] = given
    ? ['--database-url', String(flags['database-url'])]
    : file !== undefined
      ? [`--database-url-file ${JSON.stringify(file)}`, urlFile(file)]
      : ['WORKMEM_DATABASE_URL', env.WORKMEM_DATABASE_URL];
  const url = raw?.trim();
  if (!url) {
    if (given || file !== undefined) throw new UsageError(`${source} needs a postgres:// URL, got an empty string`);
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Too broken to parse: anything before an @ may be user:password.
    throw new UsageError(`${source} is not a URL: ${JSON.stringify(url.replace(/^.*@/, '***@'))}`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new UsageError(`${source} must be a postgres:// URL, got ${JSON.stringify(withoutUserinfo(url))}`);
  return { url, secrets: userinfoSecrets(url) };
}

/** The URL in a file: its first line that is not blank. */
function urlFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `--database-url-file ${JSON.stringify(path)} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  return text.split(/\r?\n/).find((line) => line.trim()) ?? '';
}

/** The session store a database choice names: Postgres, or undefined for the default (the home's folders). */
export function storeOf(database: DatabaseChoice | undefined): SessionStore | undefined {
  return database ? postgresStore({ connectionString: database.url }) : undefined;
}
