/**
 * The secrets a URL can carry, and the URL with them masked: its user:password@ (a token some
 * gateways take there), and query parameters that hold one (libpq's ?password= and
 * ?sslpassword=, a gateway's ?api_key= or ?token=).
 */
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

/** Query parameters whose value is a secret: passwords, keys, tokens, signatures. */
const SECRET_PARAM = /pass|secret|token|key|auth|sig/i;

/** The values of the URL's secret query parameters, as written and decoded. */
export function querySecrets(url: string): string[] {
  const parsed = new URL(url);
  const raw = [...parsed.search.slice(1).split('&')].flatMap((pair) => {
    const [name = '', value = ''] = pair.split('=');
    return SECRET_PARAM.test(decodeURIComponent(name)) && value ? [value] : [];
  });
  const decoded = [...parsed.searchParams].flatMap(([name, value]) => (SECRET_PARAM.test(name) && value ? [value] : []));
  return [...new Set([...raw, ...decoded])];
}

/** Every secret of the URL (userinfo and query parameters): what must never be shown. */
export function urlSecrets(url: string): string[] {
  return [...new Set([...userinfoSecrets(url), ...querySecrets(url)])];
}

/** The URL with every secret in it masked: userinfo, and the values of secret query parameters. */
export function withoutSecrets(url: string): string {
  const masked = withoutUserinfo(url);
  return masked.replace(/([?&])([^=&#]*)=([^&#]*)/g, (whole, sep: string, name: string, value: string) => {
    let decoded = name;
    try {
      decoded = decodeURIComponent(name);
    } catch {
      // a name that does not decode is judged as written
    }
    return SECRET_PARAM.test(decoded) && value ? `${sep}${name}=${MASKED_USERINFO}` : whole;
  });
}
