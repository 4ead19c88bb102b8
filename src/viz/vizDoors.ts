/**
 * The visualizer's doors (docs/design.md §11): which requests reach the server at all (our own
 * Host and Origin, a plain path) and the per-run token that opens the API and the WebSockets;
 * the token file and the challenge–response with `--inspect` sessions are the live link's
 * protocol (src/trace/liveProtocol.ts).
 */
import type { IncomingMessage } from 'node:http';

/** Our own names: a rebinding attacker's DNS name never matches. */
function ownHosts(port: number): Set<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

/**
 * Why a request may not come in, as an HTTP status with a short reason, or null. Checked
 * before routing on every request and every upgrade.
 */
export function refusal(req: IncomingMessage, port: number): { status: number; reason: string } | null {
  const host = (req.headers.host ?? '').toLowerCase();
  if (!ownHosts(port).has(host)) return { status: 421, reason: 'misdirected request' };
  const origin = req.headers.origin;
  if (origin !== undefined && ![...ownHosts(port)].some((h) => origin.toLowerCase() === `http://${h}`))
    return { status: 403, reason: 'foreign origin' };
  if (!plainPath(req.url ?? '')) return { status: 400, reason: 'bad path' };
  return null;
}

/**
 * An origin-form target with no dot segments, no encoded dot, slash or backslash, no
 * backslash and no empty segment: nothing a route could be tricked into resolving elsewhere.
 */
export function plainPath(target: string): boolean {
  if (!target.startsWith('/') || target.startsWith('//')) return false;
  const path = target.split(/[?#]/, 1)[0]!;
  if (/%2e|%2f|%5c|\\|%00/i.test(path)) return false;
  const segments = path.split('/').slice(1);
  return !segments.some((s, i) => s === '..' || s === '.' || (s === '' && i < segments.length - 1));
}

/** The bearer token of a fetch (the page sends it in Authorization, never in the URL). */
export function bearer(req: IncomingMessage): string | null {
  return /^Bearer ([A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
}

/** The subprotocols a WebSocket upgrade offers. */
export function subprotocols(req: IncomingMessage): string[] {
  return (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}
