/**
 * The visualizer's doors (docs/design.md §11): which requests reach the server at all (our own
 * Host and Origin, a plain path), the per-run token that opens the API and the
 * WebSockets, the token file through which `--inspect` sessions of the same user find
 * it, and the challenge–response by which such a session proves the listener is that
 * server before sending it anything.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readFileSync, unlinkSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { DIR_MODE, writeFileAtomic } from '../storage/atomicWrite.js';

/** 256 random bits, base64url: header- and subprotocol-safe. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** Equal strings, in time that does not depend on where they differ (hashed first: lengths may differ). */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b)) && a.length > 0;
}

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

/** The WebSocket subprotocol every client asks for; the secret rides beside it. */
export const PROTOCOL = 'workmem';

// ---- the challenge–response of --inspect sessions ----------------------------------------

/** What the server answers to a client's nonce: proves it holds the token, for this port. */
export function serverProof(token: string, port: number, clientNonce: string): string {
  return createHmac('sha256', token).update(`server:${port}:${clientNonce}`).digest('base64url');
}

/** What the client answers to the server's nonce. The two are domain-separated: one never serves as the other. */
export function clientProof(token: string, port: number, serverNonce: string): string {
  return createHmac('sha256', token).update(`client:${port}:${serverNonce}`).digest('base64url');
}

// ---- the token file --------------------------------------------------------------------------

export interface TokenFile {
  port: number;
  token: string;
  pid: number;
}

export function tokenDir(home: string): string {
  return join(home, 'viz');
}

export function tokenFilePath(home: string, port: number): string {
  return join(tokenDir(home), `${port}.json`);
}

/** 0600 in a 0700 folder: readable by the user who started the server, nobody else. */
export function writeTokenFile(home: string, file: TokenFile): string {
  const dir = tokenDir(home);
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  chmodSync(dir, DIR_MODE);
  const path = tokenFilePath(home, file.port);
  writeFileAtomic(path, `${JSON.stringify(file)}\n`, { durable: false });
  return path;
}

/** Removed on close, if it is still ours (another server may own the port by now). */
export function removeTokenFile(home: string, file: TokenFile): void {
  const path = tokenFilePath(home, file.port);
  try {
    if (readTokenFile(home, file.port)?.token === file.token) unlinkSync(path);
  } catch {
    /* already gone */
  }
}

/** The token for a port, if a server of this user wrote one: a plain file, ours, not group- or world-readable. */
export function readTokenFile(home: string, port: number): TokenFile | null {
  const path = tokenFilePath(home, port);
  try {
    const stat = lstatSync(path);
    if (!stat.isFile() || (stat.mode & 0o077) !== 0) return null;
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return null;
    const file = JSON.parse(readFileSync(path, 'utf8')) as Partial<TokenFile>;
    if (file.port !== port || typeof file.token !== 'string' || file.token.length < 22) return null;
    return { port, token: file.token, pid: Number(file.pid) };
  } catch {
    return null;
  }
}
