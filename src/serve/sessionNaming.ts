/**
 * Which session a request belongs to (docs/proxy.md): the `x-workmem-session` header, else
 * the request's `user` field, else a key made from the conversation's opening — its system
 * messages and its first user message, which a client sends unchanged on every call of one
 * conversation. The name becomes the session's id as every host loop names one
 * (sessionName.ts): the same name is always the same session, on any instance.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../history/messages.js';
import { BadRequestError } from './chatWire.js';

export const SESSION_HEADER = 'x-workmem-session';
const MAX_NAME = 256;

export type SessionSource = 'header' | 'user' | 'opening';

export function sessionNameOf(
  header: string | string[] | undefined,
  user: string | null,
  opening: readonly ChatMessage[],
): { name: string; source: SessionSource } {
  if (Array.isArray(header)) throw new BadRequestError(`give one ${SESSION_HEADER} header`, SESSION_HEADER);
  const given = header?.trim();
  if (given !== undefined && given !== '') {
    if (given.length > MAX_NAME) throw new BadRequestError(`${SESSION_HEADER} is longer than ${MAX_NAME} characters`, SESSION_HEADER);
    return { name: given, source: 'header' };
  }
  if (user !== null) return { name: `user:${user}`, source: 'user' };
  return { name: openingKey(opening), source: 'opening' };
}

/** `opening:` and 32 hex digits of SHA-256 over the system messages and the first user message, each length-prefixed. */
export function openingKey(messages: readonly ChatMessage[]): string {
  const hash = createHash('sha256');
  const part = (text: string): void => {
    hash.update(`${Buffer.byteLength(text)}:`).update(text);
  };
  // The system messages before the first user message: a reminder a client inserts later does not rename the session.
  const first = messages.findIndex((m) => m.role === 'user');
  for (const m of first < 0 ? messages : messages.slice(0, first)) if (m.role === 'system') part(`s${m.content}`);
  part(`u${first < 0 ? '' : messages[first]!.content}`);
  return `opening:${hash.digest('hex').slice(0, 32)}`;
}
