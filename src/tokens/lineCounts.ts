/**
 * Counting a generated text whose lines mostly recur (a request's tail: <context_meta> and
 * the reminder's template) without encoding the same lines again for every request. The
 * text is cut where no piece of the o200k or cl100k split pattern goes on (cutBefore), and
 * the patterns have no look-behind, so the pieces, and the count, are those of the whole
 * text. The segments without a digit are remembered; the figures change with each request.
 */
import type { TokenCounter } from './tokens.js';
import { isWhitespace } from './boundedCount.js';

const SLASH = 0x2f;
const NEWLINE = 0x0a;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Remembered segments per counter; past this the memory starts again (the template has a few dozen). */
const MAX_REMEMBERED = 512;

const remembered = new WeakMap<TokenCounter, Map<string, number>>();

/** `counter.text(text)`, each segment without a digit encoded once per counter. */
export function countByLines(counter: TokenCounter, text: string): number {
  let segments = remembered.get(counter);
  if (!segments) remembered.set(counter, (segments = new Map()));
  let total = 0;
  let start = 0;
  let digits = false;
  for (let i = 1; i < text.length; i++) {
    const prev = text.charCodeAt(i - 1);
    if (isDigit(prev)) digits = true;
    if (!cutBefore(prev, text.charCodeAt(i))) continue;
    total += countSegment(counter, segments, text.slice(start, i), digits);
    start = i;
    digits = false;
  }
  if (text.length && isDigit(text.charCodeAt(text.length - 1))) digits = true;
  return total + countSegment(counter, segments, start === 0 ? text : text.slice(start), digits);
}

/**
 * Between `prev` and `c` no piece of either split pattern goes on: after a line break, before
 * neither whitespace nor '/'; at either end of a run of ASCII digits (pieces of digits hold
 * only digits), except after whitespace (a run of it at the text's end is one piece in cl100k).
 */
function cutBefore(prev: number, c: number): boolean {
  if (prev === NEWLINE) return c !== SLASH && !isWhitespace(c);
  if (isDigit(c)) return prev < 0x80 && !isDigit(prev) && !isWhitespace(prev);
  return isDigit(prev) && c < 0x80;
}

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_9;
}

function countSegment(counter: TokenCounter, segments: Map<string, number>, segment: string, digits: boolean): number {
  if (digits) return counter.text(segment);
  let n = segments.get(segment);
  if (n === undefined) {
    if (segments.size >= MAX_REMEMBERED) segments.clear();
    segments.set(segment, (n = counter.text(segment)));
  }
  return n;
}
