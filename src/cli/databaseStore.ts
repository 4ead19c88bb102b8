/**
 * --database-url, --database-url-file or WORKMEM_DATABASE_URL (in that order): sessions
 * kept in PostgreSQL instead of the home's folders. The URL's password is a secret: an
 * error shows the URL with its user:password masked, and the session's redactor is given
 * the password. A flag puts it on the command line, where other local users can read it:
 * the file and the environment keep it off (processTitle.ts hides the flag's as it can), and
 * a file others can read is used with a warning (secretFile.ts). Its secrets are userinfo and
 * the query's (?password=, ?sslpassword=): masked wherever the URL is shown.
 */
import { urlSecrets, withoutSecrets } from '../llm/baseUrl.js';
import { readSecretFile } from './secretFile.js';
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
export function databaseOf(
  flags: Flags,
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void = (message) => void process.stderr.write(`workmem: ${message}\n`),
): DatabaseChoice | undefined {
  const given = typeof flags['database-url'] === 'string';
  const file = typeof flags['database-url-file'] === 'string' ? String(flags['database-url-file']) : undefined;
  if (given && file !== undefined) throw new UsageError('give --database-url or --database-url-file, not both');
  const [source, raw] = given
    ? ['--database-url', String(flags['database-url'])]
    : file !== undefined
      ? [`--database-url-file ${JSON.stringify(file)}`, readSecretFile(file, '--database-url-file', warn)]
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
    throw new UsageError(`${source} must be a postgres:// URL, got ${JSON.stringify(withoutSecrets(url))}`);
  return { url, secrets: urlSecrets(url) };
}

/** The session store a database choice names: Postgres, or undefined for the default (the home's folders). */
export function storeOf(database: DatabaseChoice | undefined): SessionStore | undefined {
  return database ? postgresStore({ connectionString: database.url }) : undefined;
}
