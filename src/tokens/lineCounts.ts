/**
 * Counting a generated text whose lines mostly recur (a request's tail: <context_meta> and
 * the reminder's template) without encoding the same lines again for every request. The
 * text is cut where a line break is followed by a character that is neither whitespace nor
 * '/': no piece of the o200k or cl100k split pattern spans such a place (a piece holding a
 * line break holds, after it, only line breaks, whitespace or '/'), and the pattern has no
 * look-behind, so the pieces, and the count, are those of the whole text. The lines without
 * a digit are remembered; those with one carry the request's figures and change.
 */
import type { TokenCounter } from './tokens.js';
import { isWhitespace } from './boundedCount.js';

const SLASH = 0x2f;
const NEWLINE = 0x0a;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Remembered lines per counter; past this the memory starts again (the template's lines are a few dozen). */
const MAX_REMEMBERED = 512;

const remembered = new WeakMap<TokenCounter, Map<string, number>>();

/** `counter.text(text)`, each line without a digit encoded once per counter. */
export function countByLines(counter: TokenCounter, text: string): number {
  let lines = remembered.get(counter);
  if (!lines) remembered.set(counter, (lines = new Map()));
  let total = 0;
  let start = 0;
  let digits = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= DIGIT_0 && c <= DIGIT_9) digits = true;
    else if (c === NEWLINE && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next !== SLASH && !isWhitespace(next)) {
        total += countLine(counter, lines, text.slice(start, i + 1), digits);
        start = i + 1;
        digits = false;
      }
    }
  }
  return total + countLine(counter, lines, start === 0 ? text : text.slice(start), digits);
}

function countLine(counter: TokenCounter, lines: Map<string, number>, line: string, digits: boolean): number {
  if (digits) return counter.text(line);
  let n = lines.get(line);
  if (n === undefined) {
    if (lines.size >= MAX_REMEMBERED) lines.clear();
    lines.set(line, (n = counter.text(line)));
  }
  return n;
}
