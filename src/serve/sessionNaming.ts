/**
 * Which session a client names (docs/proxy.md): the `x-workmem-session` header, else the
 * request's `user` field. A request that names none goes to the session that holds its
 * conversation (conversationIndex.ts). The name becomes the session's id as every host loop
 * names one (sessionName.ts): the same name is always the same session, on any instance.
 */
import { BadRequestError } from './chatWire.js';

export const SESSION_HEADER = 'x-workmem-session';
const MAX_NAME = 256;

export type SessionSource = 'header' | 'user';

/** The session the request names, or null when it names none. */
export function sessionNameOf(header: string | string[] | undefined, user: string | null): { name: string; source: SessionSource } | null {
  if (Array.isArray(header)) throw new BadRequestError(`give one ${SESSION_HEADER} header`, SESSION_HEADER);
  const given = header?.trim();
  if (given !== undefined && given !== '') {
    if (given.length > MAX_NAME) throw new BadRequestError(`${SESSION_HEADER} is longer than ${MAX_NAME} characters`, SESSION_HEADER);
    return { name: given, source: 'header' };
  }
  if (user !== null) return { name: `user:${user}`, source: 'user' };
  return null;
}
