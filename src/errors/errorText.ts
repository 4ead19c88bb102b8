/**
 * The one bound on error texts, applied where they enter: a server's, a provider's, a
 * tool's or the disk's error message becomes part of events, turn results and logs, so a
 * 10 MB message would make a 10 MB event (and every copy of it). An error is for a person
 * to read: its head says what went wrong; the rest is cut, with its size said.
 */
import { byteSize } from '../format/byteSize.js';

export const MAX_ERROR_TEXT_CHARS = 4_000;

/** `text` when short; else its head (not ending inside a word, so no secret shows half-masked) and how much was cut. */
export function boundErrorText(text: string, maxChars = MAX_ERROR_TEXT_CHARS): string {
  if (text.length <= maxChars) return text;
  let end = maxChars;
  // A cut inside a run of word characters (a key, a token) drops the run's visible part.
  if (isWordChar(text.charCodeAt(end))) {
    let start = end;
    while (start > 0 && end - start < 200 && isWordChar(text.charCodeAt(start - 1))) start--;
    if (start > 0 && end - start < 200) end = start;
  }
  // Never half a surrogate pair.
  if (end > 0 && text.charCodeAt(end - 1) >= 0xd800 && text.charCodeAt(end - 1) <= 0xdbff) end--;
  return `${text.slice(0, end).trimEnd()}… [error text cut: ${byteSize(Buffer.byteLength(text))} in all]`;
}

/** An error in a few words, for a note inside a longer message: the first line of its message, bounded. */
export function errorReason(error: unknown, maxChars = 200): string {
  return boundErrorText((error instanceof Error ? error.message : String(error)).split('\n', 1)[0]!, maxChars);
}

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45;
}
