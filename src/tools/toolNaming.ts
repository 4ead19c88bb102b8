/**
 * The names workmem's own tools are sent under, beside a host's (or a proxy client's) tools.
 * One rule for every door: workmem's tools keep their own names (read, write, edit,
 * compact_history; remember, recall, forget with item memory) unless one of the host's tools
 * has one of them; then every one of workmem's tools takes the prefix `workmem_`, repeated
 * until no name clashes (`workmem_read`, `workmem_write`, …). All of them, not only the one
 * that clashes: the model reads one consistent set, and the prompt names them as sent.
 */

export const OWN_TOOL_PREFIX = 'workmem_';

/** The prefix workmem's tools (`own`, their own names) take beside the host's tools. */
export function ownToolPrefix(own: readonly string[], host: Iterable<string>): string {
  const taken = new Set(host);
  if (taken.size === 0) return '';
  let prefix = '';
  while (own.some((name) => taken.has(prefix + name))) prefix += OWN_TOOL_PREFIX;
  return prefix;
}

/** A sent name's own name, when it is one of workmem's under `prefix`; null for a host's tool. */
export function ownNameOf(sent: string, prefix: string, own: ReadonlySet<string>): string | null {
  if (!sent.startsWith(prefix)) return null;
  const name = sent.slice(prefix.length);
  return own.has(name) ? name : null;
}
