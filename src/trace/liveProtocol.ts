/**
 * The live link's protocol, shared by an `--inspect` session (liveLink.ts) and the
 * visualizer's server (src/viz/): the per-run token in a 0600 file of the user who started
 * the server, and the challenge–response by which each side proves it holds that token
 * before the session sends anything (docs/design.md §11).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIR_MODE, FILE_MODE } from '../storage/atomicWrite.js';

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
  // Replaced whole (a reader never sees half of it); not synced: it names a running server only.
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file)}\n`, { mode: FILE_MODE, flag: 'wx' });
  renameSync(tmp, path);
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
