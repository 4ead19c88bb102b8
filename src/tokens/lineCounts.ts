/**
 * Counting a generated text whose lines mostly recur (a request's tail: <context_meta> and
 * the reminder's template) without encoding the same lines again for every request. The
 * text is cut where no piece of the o200k or cl100k split pattern goes on, and the patterns
 * have no look-behind, so the pieces, and the count, are those of the whole text: after a
 * line break, before neither whitespace nor '/' (a piece holding a line break holds after it
 * only line breaks, whitespace or '/'); around runs of ASCII digits, and every three digits
 * from a run's start (pieces of digits hold one to three digits, and nothing else). The
 * figures then come in pieces of at most three digits, remembered as the template's lines are.
 */
import type { TokenCounter } from './tokens.js';
import { isWhitespace } from './boundedCount.js';

const SLASH = 0x2f;
const NEWLINE = 0x0a;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Remembered segments per counter; past this the memory starts again (a template's few dozen, and at most 1,110 figures). */
const MAX_REMEMBERED = 4096;

const remembered = new WeakMap<TokenCounter, Map<string, number>>();

/** `counter.text(text)`, each segment encoded once per counter. */
export function countByLines(counter: TokenCounter, text: string): number {
  let segments = remembered.get(counter);
  if (!segments) remembered.set(counter, (segments = new Map()));
  let total = 0;
  let start = 0;
  // Where the run of ASCII digits at i began, or -1 (none, or one that follows another numeral).
  let run = isDigit(text.charCodeAt(0)) ? 0 : -1;
  for (let i = 1; i < text.length; i++) {
    const prev = text.charCodeAt(i - 1);
    const c = text.charCodeAt(i);
    let cut: boolean;
    if (!isDigit(c)) {
      run = -1;
      cut = prev === NEWLINE ? c !== SLASH && !isWhitespace(c) : isDigit(prev) && c < 0x80;
    } else if (isDigit(prev)) {
      cut = run >= 0 && (i - run) % 3 === 0;
    } else {
      // A lone whitespace character is a piece of its own before a digit; a longer run, at a text's end, is one piece in cl100k.
      const lone = !isWhitespace(prev) || i < 2 || !isWhitespace(text.charCodeAt(i - 2));
      cut = prev === NEWLINE || (prev < 0x80 && lone);
      run = prev < 0x80 ? i : -1;
    }
    if (!cut) continue;
    total += countSegment(counter, segments, text.slice(start, i));
    start = i;
  }
  return total + countSegment(counter, segments, start === 0 ? text : text.slice(start));
}

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_9;
}

function countSegment(counter: TokenCounter, segments: Map<string, number>, segment: string): number {
  let n = segments.get(segment);
  if (n === undefined) {
    if (segments.size >= MAX_REMEMBERED) segments.clear();
    segments.set(segment, (n = counter.text(segment)));
  }
  return n;
}
