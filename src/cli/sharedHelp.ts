/** Flags and their help that several commands share: where sessions are kept in PostgreSQL, and --inspect. */
import type { ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Where sessions are kept in PostgreSQL: every command that reads or writes sessions takes these. */
export const DATABASE_OPTIONS: Options = { 'database-url': { type: 'string' }, 'database-url-file': { type: 'string' } };

export const DATABASE_HELP = `  --database-url-file <path>  keep sessions in PostgreSQL: the postgres://user:password@host/db
                              URL is the file's first line (or env WORKMEM_DATABASE_URL)
  --database-url <url>        the same URL as a flag: other local users can read it in
                              ps until workmem hides it, and it stays in your shell
                              history; a warning says so (the password is never shown)`;

export const INSPECT_HELP = `  --inspect           stream the session live to your \`workmem viz\` on 127.0.0.1
                      (only after it proves it is the server you started)
  --inspect-port <n>  the visualizer's port (default 4900)`;
