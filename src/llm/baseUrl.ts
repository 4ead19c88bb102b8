/** A base URL's user:password@ (a token some gateways take there): the secrets in it, and the URL with it masked. */
import { MASKED_USERINFO } from '../secrets/redact.js';

/** The URL's password and user:password, as written and decoded: what must never be shown. */
export function userinfoSecrets(url: string): string[] {
  const { username, password } = new URL(url);
  if (!username && !password) return [];
  const decode = (s: string): string => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  // A user with no password is a token (https://TOKEN@host): then the user is the secret.
  const raw = password
    ? [`${username}:${password}`, password, `${decode(username)}:${decode(password)}`, decode(password)]
    : [username, decode(username)];
  return [...new Set(raw.filter(Boolean))];
}

/** The URL with its userinfo, if any, masked. */
export function withoutUserinfo(url: string): string {
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return url;
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, `$1${MASKED_USERINFO}@`);
}
