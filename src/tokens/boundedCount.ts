/**
 * Token counting whose cost stays linear in the text. BPE works on the pieces the
 * encoding's split pattern cuts a text into, and costs the square of a piece's length:
 * 200 KB of "aaaa…" (one piece) blocked the event loop for 41 s. Here no piece longer than
 * `maxPiece` characters reaches the encoder: text is handed over in chunks made of whole
 * pieces, which counts exactly as before, and a longer piece (a run of one character
 * class) is cut into `maxPiece`-character slices, which may count a few tokens off.
 */

/**
 * The longest piece handed to BPE. Ordinary text never has longer ones (words, numbers of
 * 3 digits, short runs of punctuation or spaces); a Chinese sentence of 128 characters
 * without punctuation would, and then counts within a token or two per slice.
 */
export const MAX_PIECE_CHARS = 128;
/** Whole pieces are handed to the encoder in chunks of about this size (fewer calls). */
const CHUNK_CHARS = 64 * 1024;

export type CountText = (text: string) => number;

/**
 * `count` bounded: `split` is the encoding's own pre-tokenizer pattern (a global, unicode
 * regex), so that chunk boundaries fall where the encoder would cut anyway.
 */
export function boundedCounter(count: CountText, split: RegExp, maxPiece = MAX_PIECE_CHARS, chunkChars = CHUNK_CHARS): CountText {
  // A piece longer than maxPiece holds a run of maxPiece − 4 letters (a word, with one
  // character before and a contraction after), of punctuation and line breaks, or of
  // whitespace: text with none of these runs is counted whole, as it always was. (Fixed
  // counts: an open-ended repeat over megabytes overflows the regex engine's stack.)
  const k = Math.max(1, maxPiece - 4);
  const mayHaveLongPiece = new RegExp(`[\\p{L}\\p{M}]{${k}}|(?:[^\\p{L}\\p{N}\\s]|[\\r\\n]){${k}}|\\s{${k}}`, 'u');
  const flags = split.flags.replace('g', '');
  const piece = new RegExp(split.source, flags.includes('y') ? flags : `${flags}y`);
  // Each piece is matched in a window of this many characters, so that a run of megabytes
  // is never matched whole; a match that fills the window is a long piece, cut anyway.
  const window = maxPiece * 4;
  return (text) => {
    if (!text) return 0;
    if (text.length <= maxPiece || !hasLongRun(text, k) || !mayHaveLongPiece.test(text)) return count(text);
    let total = 0;
    let chunkStart = 0;
    // A chunk never ends on whitespace: there the encoder would join runs it splits in the whole text.
    let cuttable = false;
    for (let at = 0; at < text.length;) {
      const view = text.slice(at, at + window);
      piece.lastIndex = 0;
      const length = piece.exec(view)?.[0].length || 1;
      if (length > maxPiece) {
        if (at > chunkStart) total += count(text.slice(chunkStart, at));
        total += countSlices(view.slice(0, length), count, maxPiece);
        chunkStart = at + length;
      } else if (cuttable && at + length - chunkStart > chunkChars) {
        total += count(text.slice(chunkStart, at));
        chunkStart = at;
      }
      at += length;
      cuttable = !/\s/u.test(text[at - 1]!);
    }
    if (text.length > chunkStart) total += count(text.slice(chunkStart));
    return total;
  };
}

/**
 * Whether `text` has a run of `k` characters none of which is a space, or of `k` whitespace
 * characters: what every run the precise check looks for has. A loop over char codes, as
 * a regex costs several times the count itself on short texts.
 */
function hasLongRun(text: string, k: number): boolean {
  let other = 0;
  let blank = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    other = c === 32 ? 0 : other + 1;
    blank = c === 32 || isWhitespace(c) ? blank + 1 : 0;
    if (other >= k || blank >= k) return true;
  }
  return false;
}

/** JavaScript's \s, by char code. */
export function isWhitespace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) ||
    c === 32 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** A long piece in slices of at most `size` characters, never splitting a surrogate pair. */
function countSlices(piece: string, count: CountText, size: number): number {
  let total = 0;
  for (let i = 0; i < piece.length;) {
    let end = Math.min(piece.length, i + size);
    const last = piece.charCodeAt(end - 1);
    if (end < piece.length && last >= 0xd800 && last <= 0xdbff && end - 1 > i) end--;
    total += count(piece.slice(i, end));
    i = end;
  }
  return total;
}
