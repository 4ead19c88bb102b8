/**
 * workmem viz: serves the visualizer until Ctrl-C.
 */
import type { CliIO, Flags } from './cliIO.js';
import { DEFAULT_VIZ_PORT } from '../viz/liveLink.js';
import { findSession } from '../session/index.js';
import { defaultHome } from '../storage/sessionPaths.js';
import { startVizServer } from '../viz/vizServer.js';
import { UsageError } from './usageError.js';

export async function main({ flags }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const home = typeof flags.home === 'string' ? flags.home : defaultHome(io.env);
  const port = flags.port === undefined ? DEFAULT_VIZ_PORT : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port ${JSON.stringify(flags.port)} is not a port number`);
  let session = '';
  if (typeof flags.session === 'string') {
    const dir = await findSession(flags.session, { home }); // an unknown id stops here, plainly
    session = `?session=${dir.split(/[/\\]/).pop()}`;
  }
  const server = await startVizServer({ home, port });
  // The token rides in the fragment: the browser never sends it to a server or in a Referer.
  io.stdout.write(
    `workmem visualizer on ${server.url}/${session}#token=${server.token}\n(sessions run with --inspect and the same home appear live; Ctrl-C stops)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  return 0;
}
