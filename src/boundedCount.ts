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
  // A piece longer than maxPiece is either all whitespace, or has no space after its first
  // character: text with neither kind of run is counted whole, as it always was.
  const mayHaveLongPiece = new RegExp(`[^ ]{${maxPiece},}|\\s{${maxPiece + 1},}`, 'u');
  const pattern = new RegExp(split.source, split.flags.includes('g') ? split.flags : `${split.flags}g`);
  return (text) => {
    if (!text) return 0;
    if (text.length <= maxPiece || !mayHaveLongPiece.test(text)) return count(text);
    let total = 0;
    let chunkStart = 0;
    let at = 0;
    // A chunk never ends on whitespace: there the encoder would join runs it splits in the whole text.
    let cuttable = false;
    pattern.lastIndex = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      const piece = m[0];
      if (piece.length === 0) {
        pattern.lastIndex++;
        continue;
      }
      const start = m.index;
      if (piece.length > maxPiece) {
        if (start > chunkStart) total += count(text.slice(chunkStart, start));
        total += countSlices(piece, count, maxPiece);
        chunkStart = start + piece.length;
      } else if (cuttable && start + piece.length - chunkStart > chunkChars) {
        total += count(text.slice(chunkStart, start));
        chunkStart = start;
      }
      at = start + piece.length;
      cuttable = !/\s/u.test(piece.at(-1)!);
    }
    // The pattern covers every character; whatever it left (it never does) is counted too.
    if (text.length > chunkStart) total += count(text.slice(chunkStart, Math.max(at, text.length)));
    return total;
  };
}

/** A long piece in slices of at most `size` characters, never splitting a surrogate pair. */
function countSlices(piece: string, count: CountText, size: number): number {
  let total = 0;
  for (let i = 0; i < piece.length; ) {
    let end = Math.min(piece.length, i + size);
    const last = piece.charCodeAt(end - 1);
    if (end < piece.length && last >= 0xd800 && last <= 0xdbff && end - 1 > i) end--;
    total += count(piece.slice(i, end));
    i = end;
  }
  return total;
}
