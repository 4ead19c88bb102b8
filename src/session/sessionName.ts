/**
 * A session named by its host (a middleware's sessionId, the proxy's header): the same name
 * is always the same session. Session ids are UUIDs (they name folders and rows), so a name
 * becomes one by hashing: SHA-256, the first 16 bytes, marked as a name-based UUID (v8).
 */
import { createHash } from 'node:crypto';

export function sessionIdFor(name: string): string {
  const bytes = createHash('sha256').update(`workmem-session:${name}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
