/**
 * JSON.parse for a body of megabytes without holding the event loop. A client may send a
 * conversation of 20,000 messages (2.6 MB) in one request; JSON.parse takes it whole in
 * 15–30 ms, and every other session in the process waits that long. Here the body's object
 * and the arrays and objects directly in it (a conversation's messages, a Responses input)
 * are cut at their members, each member parsed by JSON.parse itself, and the loop let go
 * round between slices of about a millisecond.
 *
 * Why not a worker: handing a parsed value back to the main thread (a structured clone)
 * costs about five times what parsing it does. Why not a streaming parser from npm: those
 * parse in JavaScript a character at a time, some fifteen times JSON.parse's cost; here the
 * scan only jumps from quote to bracket with native searches, and JSON.parse does the rest.
 * Every value is JSON.parse's, and a malformed body is parsed whole once more, so that its
 * error is JSON.parse's own. The body may come in the pieces it was read in: they are never
 * joined into one string of megabytes (allocating one holds the loop ~8 ms on a busy
 * machine).
 */

/** Bodies up to this many characters are parsed in one call (a millisecond or two). */
const WHOLE = 256 * 1024;
/** Containers this deep or deeper (a message in `messages`) are parsed whole, member by member above them. */
const SPLIT_DEPTH = 2;
/** A slice of work between two chances for the loop to turn. */
const SLICE_MS = 1;

const STRUCTURE = /["{}[\]]/g;
const SCALAR_END = /[,\]}\s]/g;

class Malformed extends Error {}

/** The value of `text` (or of its pieces, in order) as JSON.parse gives it, taken in slices with `pause()` between them. */
export async function parseJsonInSlices(text: string | readonly string[], pause: () => Promise<void>): Promise<unknown> {
  const pieces = new Pieces(typeof text === 'string' ? [text] : text);
  const whole = (): string => (typeof text === 'string' ? text : text.join(''));
  if (pieces.length <= WHOLE) return JSON.parse(whole());
  try {
    return await new SlicedParse(pieces, pause).document();
  } catch (error) {
    // JSON.parse says what is wrong, where (or, should the scan have been wrong, parses it).
    if (error instanceof Malformed || error instanceof SyntaxError) return JSON.parse(whole());
    throw error;
  }
}

/**
 * The text in its pieces, read by positions in the whole. Searches go from piece to piece
 * (the patterns are one character long: no match spans two), so nothing is copied but a
 * value that lies across two pieces, once, when it is sliced for JSON.parse.
 */
class Pieces {
  /** starts[j]: where piece j begins in the whole; starts[n]: the whole's length. */
  private readonly starts: number[];
  /** The piece read last: reads go forward, mostly within one piece. */
  private at = 0;
  readonly length: number;

  constructor(private readonly pieces: readonly string[]) {
    let length = 0;
    this.starts = pieces.map((piece) => {
      const start = length;
      length += piece.length;
      return start;
    });
    this.starts.push(length);
    this.length = length;
  }

  /** Makes the piece that holds `position` the current one; false outside the text. */
  private seek(position: number): boolean {
    if (position < 0 || position >= this.length) return false;
    while (position < this.starts[this.at]!) this.at--;
    while (position >= this.starts[this.at + 1]!) this.at++;
    return true;
  }

  /** The character at `position` ('' past the end). */
  char(position: number): string {
    return this.seek(position) ? this.pieces[this.at]![position - this.starts[this.at]!]! : '';
  }

  charCodeAt(position: number): number {
    return this.seek(position) ? this.pieces[this.at]!.charCodeAt(position - this.starts[this.at]!) : NaN;
  }

  /** Where the character `search` next stands at or after `from` (-1: nowhere). */
  indexOf(search: string, from: number): number {
    return this.scan(from, (piece, local) => piece.indexOf(search, local));
  }

  /** Where the global, one-character `pattern` next matches at or after `from` (-1: nowhere). */
  find(pattern: RegExp, from: number): number {
    return this.scan(from, (piece, local) => {
      pattern.lastIndex = local;
      return pattern.exec(piece)?.index ?? -1;
    });
  }

  /** The first place `search` finds in a piece, from `from` on, in the whole (-1: none). */
  private scan(from: number, search: (piece: string, local: number) => number): number {
    if (!this.seek(from)) return -1;
    for (let j = this.at, local = from - this.starts[j]!; j < this.pieces.length; j++, local = 0) {
      const found = search(this.pieces[j]!, local);
      if (found >= 0) return this.starts[(this.at = j)]! + found;
    }
    return -1;
  }

  slice(from: number, to: number): string {
    if (to <= from || !this.seek(from)) return '';
    const first = this.at;
    const start = from - this.starts[first]!;
    if (to <= this.starts[first + 1]!) return this.pieces[first]!.slice(start, to - this.starts[first]!);
    const parts = [this.pieces[first]!.slice(start)];
    let j = first + 1;
    for (; j < this.pieces.length && this.starts[j + 1]! < to; j++) parts.push(this.pieces[j]!);
    if (j < this.pieces.length) parts.push(this.pieces[j]!.slice(0, to - this.starts[j]!));
    return parts.join('');
  }
}

/** A value parsed, and where its text ends (exclusive). */
interface Parsed {
  value: unknown;
  end: number;
}

class SlicedParse {
  private since = performance.now();

  constructor(
    private readonly text: Pieces,
    private readonly pause: () => Promise<void>,
  ) {}

  async document(): Promise<unknown> {
    const start = this.skipSpace(0);
    const { value, end } = await this.valueAt(start, 0);
    if (this.skipSpace(end) !== this.text.length) throw new Malformed();
    return value;
  }

  /** The value that starts at `at`, and where it ends: cut at its members above SPLIT_DEPTH, else whole and at once. */
  private valueAt(at: number, depth: number): Parsed | Promise<Parsed> {
    const c = this.text.char(at);
    if ((c === '{' || c === '[') && depth < SPLIT_DEPTH) return c === '{' ? this.object(at, depth) : this.array(at, depth);
    const end = this.valueEnd(at);
    return { value: JSON.parse(this.text.slice(at, end)), end };
  }

  private async array(at: number, depth: number): Promise<Parsed> {
    const out: unknown[] = [];
    let p = this.skipSpace(at + 1);
    if (this.text.char(p) === ']') return { value: out, end: p + 1 };
    for (;;) {
      let member = this.valueAt(p, depth + 1);
      if (member instanceof Promise) member = await member;
      out.push(member.value);
      if (this.due()) await this.turn();
      p = this.skipSpace(member.end);
      if (this.text.char(p) === ']') return { value: out, end: p + 1 };
      if (this.text.char(p) !== ',') throw new Malformed();
      p = this.skipSpace(p + 1);
    }
  }

  private async object(at: number, depth: number): Promise<Parsed> {
    const out: Record<string, unknown> = {};
    let p = this.skipSpace(at + 1);
    if (this.text.char(p) === '}') return { value: out, end: p + 1 };
    for (;;) {
      if (this.text.char(p) !== '"') throw new Malformed();
      const keyEnd = this.stringEnd(p);
      const key = JSON.parse(this.text.slice(p, keyEnd)) as string;
      p = this.skipSpace(keyEnd);
      if (this.text.char(p) !== ':') throw new Malformed();
      let member = this.valueAt(this.skipSpace(p + 1), depth + 1);
      if (member instanceof Promise) member = await member;
      // JSON.parse makes "__proto__" an own property; an assignment would set the prototype.
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: member.value, enumerable: true, writable: true, configurable: true });
      else out[key] = member.value;
      if (this.due()) await this.turn();
      p = this.skipSpace(member.end);
      if (this.text.char(p) === '}') return { value: out, end: p + 1 };
      if (this.text.char(p) !== ',') throw new Malformed();
      p = this.skipSpace(p + 1);
    }
  }

  /** Whether the slice has run its time (checked without a promise: a member takes microseconds). */
  private due(): boolean {
    return performance.now() - this.since >= SLICE_MS;
  }

  /** Lets the loop turn, and starts a slice. */
  private async turn(): Promise<void> {
    await this.pause();
    this.since = performance.now();
  }

  /** The end (exclusive) of the value at `at`, found by its brackets and quotes; JSON.parse checks the rest. */
  private valueEnd(at: number): number {
    const c = this.text.char(at);
    if (c === '"') return this.stringEnd(at);
    if (c === '{' || c === '[') return this.containerEnd(at);
    const found = this.text.find(SCALAR_END, at);
    const end = found < 0 ? this.text.length : found;
    if (end === at) throw new Malformed();
    return end;
  }

  private containerEnd(at: number): number {
    let depth = 0;
    let from = at;
    for (;;) {
      const hit = this.text.find(STRUCTURE, from);
      if (hit < 0) throw new Malformed();
      const c = this.text.char(hit);
      from = hit + 1;
      if (c === '"') from = this.stringEnd(hit);
      else if (c === '{' || c === '[') depth++;
      else if (--depth === 0) return hit + 1;
    }
  }

  /** The end (exclusive) of the string whose opening quote is at `at`. */
  private stringEnd(at: number): number {
    let from = at + 1;
    for (;;) {
      const q = this.text.indexOf('"', from);
      if (q < 0) throw new Malformed();
      let slashes = 0;
      while (this.text.charCodeAt(q - 1 - slashes) === 92) slashes++;
      if (slashes % 2 === 0) return q + 1;
      from = q + 1;
    }
  }

  private skipSpace(at: number): number {
    let p = at;
    for (;;) {
      const c = this.text.charCodeAt(p);
      if (c === 32 || c === 10 || c === 13 || c === 9) p++;
      else return p;
    }
  }
}
