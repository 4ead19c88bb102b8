/**
 * API keys never reach what workmem writes or reports: messages.jsonl, meta.json,
 * trace.jsonl, error messages and error events. A redactor knows the session's secrets
 * (the model's API key, the host's own) and also masks anything shaped like an OpenAI
 * key. It is applied to whole serialised lines, and costs a few `includes` when there is
 * nothing to hide.
 */
export type Redact = ((text: string) => string) & {
  /** The strings it masks (JSON-escaped forms included), longest first: what a stream window must catch. */
  readonly secrets?: readonly string[];
};

const KEY_SHAPE = /\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_*-]{8,}/g;
/** Shorter secrets would mask ordinary words. */
const MIN_SECRET = 8;

export const REDACTED = '[redacted]';

export function redactor(secrets: readonly (string | undefined | null)[]): Redact {
  const plain = secrets.map((s) => s?.trim() ?? '').filter((s) => s.length >= MIN_SECRET);
  // As written inside a JSON string, too (a secret with quotes or backslashes changes there).
  const known = [...new Set([...plain, ...plain.map((s) => JSON.stringify(s).slice(1, -1))])].sort(
    (a, b) => b.length - a.length, // a longer secret first, in case one contains another
  );
  const redact = (text: string): string => {
    let out = text;
    for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    if (out.includes('sk-')) out = out.replace(KEY_SHAPE, `$1…${REDACTED}`);
    if (out.includes('@')) out = out.replace(URL_USERINFO, `$1${MASKED_USERINFO}@`);
    return out;
  };
  return Object.assign(redact, { secrets: known });
}

/** A URL's user:password (`http://user:secret@host/`) is never shown, whatever its length. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi;
export const MASKED_USERINFO = '***';

/** One-off: `text` with `secret` and key-shaped strings masked. */
export function redact(text: string, secret: string): string {
  return redactor([secret])(text);
}

/**
 * Redaction of text that arrives in pieces (streamed deltas): a secret split over two
 * deltas is caught by holding back as many characters as the longest secret minus one
 * (and any key-shaped word still growing), released once they cannot start a secret.
 */
export interface StreamRedactor {
  /** The redacted text that can be shown now (may be empty). */
  push(delta: string): string;
  /** The rest, redacted: at the end of the message, on abort or failure. */
  flush(): string;
}

/** The start of a key shape (sk-…) or of a URL's userinfo at the end of the text: wait for more. */
const GROWING_MAX = 512;
const GROWING = /(?:\bs|\bsk|\bsk-[A-Za-z0-9_*-]*|\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#@"'<>]*)$/i;

export function streamRedactor(redact: Redact): StreamRedactor {
  const secrets = redact.secrets ?? [];
  const hold = Math.max(0, (secrets[0]?.length ?? 0) - 1);
  let pending = '';
  return {
    push(delta) {
      pending += delta;
      let cut = pending.length - hold;
      if (cut <= 0) return '';
      // Only the end can be growing (keys and userinfo are short): never scan a long text here.
      const from = Math.max(0, cut - GROWING_MAX);
      const growing = GROWING.exec(pending.slice(from, cut));
      if (growing) cut = from + growing.index;
      // A whole secret across the cut is held back whole, never shown in two parts.
      for (let moved = true; moved && cut > 0;) {
        moved = false;
        for (const secret of secrets) {
          const at = pending.indexOf(secret, Math.max(0, cut - secret.length + 1));
          if (at >= 0 && at < cut) {
            cut = at;
            moved = true;
          }
        }
      }
      if (cut <= 0) return '';
      const out = redact(pending.slice(0, cut));
      pending = pending.slice(cut);
      return out;
    },
    flush() {
      const out = redact(pending);
      pending = '';
      return out;
    },
  };
}
