/**
 * Idle keep-alive connections outlive what the server tells its clients. A client reuses an
 * idle socket until the `Keep-Alive: timeout` the server sent (less a second or two); on a
 * loaded machine its clock runs late against the server's, and a request written just as the
 * server closes the socket is reset (ECONNRESET, a failed turn). Node 20 has no
 * keepAliveTimeoutBuffer, so the server keeps idle sockets this long and advertises less.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** What clients are told, in seconds (Node's own default). */
export const ADVERTISED_KEEP_ALIVE_S = 5;
/** How long an idle socket is really kept: ahead of the advertised end by more than a loaded loop's lag. */
export const KEEP_ALIVE_MS = 30_000;

/** The server keeps idle sockets KEEP_ALIVE_MS and advertises ADVERTISED_KEEP_ALIVE_S on every response. */
export function keepAliveAhead(server: Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.prependListener('request', advertiseKeepAlive);
}

/** Set before the response's head is written: Node then writes no Keep-Alive line of its own. */
function advertiseKeepAlive(req: IncomingMessage, res: ServerResponse): void {
  const asked = req.headers.connection?.toLowerCase() ?? '';
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor < 1 || asked.includes('close')) return;
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('Keep-Alive', `timeout=${ADVERTISED_KEEP_ALIVE_S}`);
}
