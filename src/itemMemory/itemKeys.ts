/**
 * Where item memory is kept in the state store: one key per item,
 * `items:<kind>:<owner>:<item id>`, the owner (a user id or a session id) written with
 * encodeURIComponent. The encoded owner never holds a `:`, so no owner's prefix is the start
 * of another's (`items:user:org1:` cannot match user `org1:alice`, whose items are under
 * `items:user:org1%3Aalice:`); and what follows an owner's prefix is that owner's only when it
 * is an item id alone. Before issue 24 the owner was written raw: an owner whose id needed no
 * encoding has the same keys as then, and one whose id holds a `:` finds its old keys by the
 * raw prefix (the same test of the tail tells its own from a longer id's), to move them.
 */

/** Whose items: a user's (shared by their sessions), a session's, or another kind a host names. */
export interface ItemOwner {
  kind: string;
  id: string;
}

const KIND = /^[\w.-]{1,50}$/;
const MAX_ID = 200;
/** What an owner could be written as before ids were encoded. */
const LEGACY_SCOPE = /^[\w:.-]{1,200}$/;

/** `{kind, id}`, or the older string form `<kind>:<id>` (`user:ada`, `session:<uuid>`). */
export function itemOwner(scope: ItemOwner | string): ItemOwner {
  let owner: ItemOwner;
  if (typeof scope === 'string') {
    const colon = scope.indexOf(':');
    owner = { kind: colon < 0 ? scope : scope.slice(0, colon), id: colon < 0 ? '' : scope.slice(colon + 1) };
  } else owner = scope;
  if (typeof owner?.kind !== 'string' || !KIND.test(owner.kind))
    throw new Error(`item memory scope kind ${JSON.stringify(owner?.kind)} must be 1-50 letters, digits, _ . -`);
  if (typeof owner.id !== 'string' || owner.id.length === 0 || owner.id.length > MAX_ID || !encodable(owner.id))
    throw new Error(`item memory ${owner.kind} id ${JSON.stringify(owner.id)} must be a non-empty string of at most ${MAX_ID} characters`);
  return { kind: owner.kind, id: owner.id };
}

/** The prefix of every key of the owner's items (and of keys that are not theirs: see ownsKey). */
export function itemPrefix(owner: ItemOwner): string {
  return `items:${owner.kind}:${encodeURIComponent(owner.id)}:`;
}

/** The prefix the owner's items had before issue 24, when it differs from itemPrefix. */
export function legacyItemPrefix(owner: ItemOwner): string | null {
  const raw = `${owner.kind}:${owner.id}`;
  const old = `items:${raw}:`;
  return LEGACY_SCOPE.test(raw) && old !== itemPrefix(owner) ? old : null;
}

/** Whether `key`, found under `prefix` (the owner's), is the owner's own item: the prefix and an item id alone. */
export function ownsKey(prefix: string, key: string): boolean {
  return key.startsWith(prefix) && key.length > prefix.length && !key.includes(':', prefix.length);
}

/** encodeURIComponent refuses a lone surrogate (text cut in the middle of a character). */
function encodable(id: string): boolean {
  try {
    encodeURIComponent(id);
    return true;
  } catch {
    return false;
  }
}
