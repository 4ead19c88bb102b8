/**
 * API keys never reach what workmem writes or reports: messages.jsonl, meta.json,
 * trace.jsonl, error messages and error events. A redactor knows the session's secrets
 * (the model's API key, the host's own) and also masks anything shaped like an OpenAI
 * key. It is applied to whole serialised lines, and costs a few `includes` when there is
 * nothing to hide.
 */
export type Redact = (text: string) => string;

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
  return (text) => {
    let out = text;
    for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    if (out.includes('sk-')) out = out.replace(KEY_SHAPE, `$1…${REDACTED}`);
    return out;
  };
}

/** One-off: `text` with `secret` and key-shaped strings masked. */
export function redact(text: string, secret: string): string {
  return redactor([secret])(text);
}
