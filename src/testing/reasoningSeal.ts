/**
 * The test server's stand-in for a provider's opaque reasoning: Anthropic's thinking
 * `signature`, OpenAI's `encrypted_content`. A seal carries its text and a MAC over it, so
 * the server can tell a block it wrote, sent back unchanged, from one that was altered or
 * made up, and refuse the latter as the providers do.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** One per process: a seal from another test server run is not this one's. */
const KEY = randomBytes(32);

const mac = (text: string): string => createHmac('sha256', KEY).update(text).digest('base64url');

export function seal(text: string): string {
  return `${Buffer.from(text).toString('base64url')}.${mac(text)}`;
}

/** The sealed text, or null when the seal is not one of ours. */
export function unseal(sealed: unknown): string | null {
  if (typeof sealed !== 'string') return null;
  const [body, tag] = sealed.split('.');
  if (!body || !tag) return null;
  const text = Buffer.from(body, 'base64url').toString('utf8');
  return mac(text) === tag ? text : null;
}
