/**
 * Which requests reach the proxy. On loopback, the visualizer's doors (vizDoors.ts): our own
 * Host only (no DNS rebinding) and no foreign Origin; beyond loopback any browser Origin is
 * refused: the proxy serves programs, not pages. Everywhere the proxy's token is required —
 * in `x-workmem-token`, or as the client's key (Authorization: Bearer, or an Anthropic
 * client's x-api-key) when that key is not forwarded upstream (--forward-auth).
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { sameSecret } from '../trace/liveProtocol.js';
import { bearer, plainPath, refusal } from '../viz/vizDoors.js';

export const TOKEN_HEADER = 'x-workmem-token';

export interface Doors {
  /** Listening on a loopback address only. */
  loopback: boolean;
  /** Required beyond loopback; optional on it. */
  token: string | undefined;
  /** The client's Authorization goes upstream (then the token rides in x-workmem-token). */
  forwardAuth: boolean;
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1';
}

export function proxyRefusal(req: IncomingMessage, port: number, doors: Doors): { status: number; reason: string } | null {
  if (doors.loopback) {
    const refused = refusal(req, port);
    if (refused) return refused;
  } else {
    if (req.headers.origin !== undefined) return { status: 403, reason: 'foreign origin' };
    if (!plainPath(req.url ?? '')) return { status: 400, reason: 'bad path' };
  }
  if (doors.token === undefined) return null;
  const header = req.headers[TOKEN_HEADER];
  // An Anthropic client sends its key as x-api-key: the token rides there when its key is not forwarded.
  const apiKey = req.headers['x-api-key'];
  const given =
    typeof header === 'string' ? header : doors.forwardAuth ? null : (bearer(req) ?? (typeof apiKey === 'string' ? apiKey : null));
  return given !== null && sameSecret(given, doors.token) ? null : { status: 401, reason: 'a workmem serve token is required' };
}
