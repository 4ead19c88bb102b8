/**
 * workmem viz: serves the visualizer until Ctrl-C, for the home's sessions or, with
 * --database-url / WORKMEM_DATABASE_URL, those kept in Postgres (their traces read from it).
 */
import type { CliIO, Flags } from './cliIO.js';
import { DEFAULT_VIZ_PORT } from '../trace/liveLink.js';
import { findSession } from '../session/index.js';
import { defaultHome } from '../storage/sessionPaths.js';
import { startVizServer } from '../viz/vizServer.js';
import type { SessionStore } from '../storage/sessionStore.js';
import { databaseOf, storeOf, type DatabaseChoice } from './databaseStore.js';
import { withoutUserinfo } from '../llm/baseUrl.js';
import { tokenFilePath } from '../trace/liveProtocol.js';
import { terminalLine } from './terminalText.js';
import { UsageError } from './usageError.js';

export async function main({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const [named, ...extra] = positionals; // `workmem viz <id>` is `workmem viz --session <id>`
  if (extra.length || (named !== undefined && typeof flags.session === 'string'))
    throw new UsageError('name one session: workmem viz [<id> | --session <id>]');
  if (named !== undefined) flags = { ...flags, session: named };
  const home = typeof flags.home === 'string' ? flags.home : defaultHome(io.env);
  const port = flags.port === undefined ? DEFAULT_VIZ_PORT : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port ${JSON.stringify(flags.port)} is not a port number`);
  const database = databaseOf(flags, io.env);
  const store = storeOf(database);
  try {
    return await serve(flags, io, home, port, store, database);
  } finally {
    await store?.close();
  }
}

async function serve(
  flags: Flags,
  io: CliIO,
  home: string,
  port: number,
  store: SessionStore | undefined,
  database: DatabaseChoice | undefined,
): Promise<number> {
  let session = '';
  if (typeof flags.session === 'string') {
    const where = await findSession(flags.session, { home, ...(store ? { store } : {}) }); // an unknown id stops here, plainly
    session = `?session=${where.split(/[/\\]/).pop()}`;
  }
  const server = await startVizServer({ home, port, ...(store ? { store } : {}) });
  // The token rides in the fragment: the browser never sends it to a server or in a Referer.
  io.stdout.write(`workmem visualizer on ${server.url}/${session}#token=${server.token}\n`);
  // What it reads and what it writes where: the home's sessions are the user's own.
  io.stdout.write(
    `(the sessions ${database ? `in ${terminalLine(withoutUserinfo(database.url))}` : `of ${terminalLine(home)}`}; those run with --inspect and the same home appear live;\n` +
      ` its token is kept in ${terminalLine(tokenFilePath(home, server.port))} until it stops; Ctrl-C stops)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  return 0;
}
