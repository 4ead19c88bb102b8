/**
 * --database-url / WORKMEM_DATABASE_URL (the flag first): sessions kept in PostgreSQL
 * instead of the home's folders. The URL's password is a secret: an error shows the URL
 * with its user:password masked, and the session's redactor is given the password.
 */
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

/** The database the flag or, failing it, the environment names; undefined for the filesystem store. */
export function databaseOf(flags: Flags, env: NodeJS.ProcessEnv): DatabaseChoice | undefined {
  const fromFlag = typeof flags['database-url'] === 'string';
  const url = (fromFlag ? String(flags['database-url']) : env.WORKMEM_DATABASE_URL)?.trim();
  if (!url) {
    if (fromFlag) throw new UsageError('--database-url needs a postgres:// URL, got an empty string');
    return undefined;
  }
  const source = fromFlag ? '--database-url' : 'WORKMEM_DATABASE_URL';
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

/** The session store a database choice names: Postgres, or undefined for the default (the home's folders). */
export function storeOf(database: DatabaseChoice | undefined): SessionStore | undefined {
  return database ? postgresStore({ connectionString: database.url }) : undefined;
}

