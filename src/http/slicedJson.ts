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
 * error is JSON.parse's own.
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

/** The value of `text` as JSON.parse gives it, taken in slices with `pause()` between them. */
export async function parseJsonInSlices(text: string, pause: () => Promise<void>): Promise<unknown> {
  if (text.length <= WHOLE) return JSON.parse(text);
  try {
    return await new SlicedParse(text, pause).document();
  } catch (error) {
    // JSON.parse says what is wrong, where (or, should the scan have been wrong, parses it).
    if (error instanceof Malformed || error instanceof SyntaxError) return JSON.parse(text);
    throw error;
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
    private readonly text: string,
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
    const c = this.text[at];
    if ((c === '{' || c === '[') && depth < SPLIT_DEPTH) return c === '{' ? this.object(at, depth) : this.array(at, depth);
    const end = this.valueEnd(at);
    return { value: JSON.parse(this.text.slice(at, end)), end };
  }

  private async array(at: number, depth: number): Promise<Parsed> {
    const out: unknown[] = [];
    let p = this.skipSpace(at + 1);
    if (this.text[p] === ']') return { value: out, end: p + 1 };
    for (;;) {
      let member = this.valueAt(p, depth + 1);
      if (member instanceof Promise) member = await member;
      out.push(member.value);
      if (this.due()) await this.turn();
      p = this.skipSpace(member.end);
      if (this.text[p] === ']') return { value: out, end: p + 1 };
      if (this.text[p] !== ',') throw new Malformed();
      p = this.skipSpace(p + 1);
    }
  }

  private async object(at: number, depth: number): Promise<Parsed> {
    const out: Record<string, unknown> = {};
    let p = this.skipSpace(at + 1);
    if (this.text[p] === '}') return { value: out, end: p + 1 };
    for (;;) {
      if (this.text[p] !== '"') throw new Malformed();
      const keyEnd = this.stringEnd(p);
      const key = JSON.parse(this.text.slice(p, keyEnd)) as string;
      p = this.skipSpace(keyEnd);
      if (this.text[p] !== ':') throw new Malformed();
      let member = this.valueAt(this.skipSpace(p + 1), depth + 1);
      if (member instanceof Promise) member = await member;
      // JSON.parse makes "__proto__" an own property; an assignment would set the prototype.
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: member.value, enumerable: true, writable: true, configurable: true });
      else out[key] = member.value;
      if (this.due()) await this.turn();
      p = this.skipSpace(member.end);
      if (this.text[p] === '}') return { value: out, end: p + 1 };
      if (this.text[p] !== ',') throw new Malformed();
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
    const c = this.text[at];
    if (c === '"') return this.stringEnd(at);
    if (c === '{' || c === '[') return this.containerEnd(at);
    SCALAR_END.lastIndex = at;
    const end = SCALAR_END.exec(this.text)?.index ?? this.text.length;
    if (end === at) throw new Malformed();
    return end;
  }

  private containerEnd(at: number): number {
    let depth = 0;
    STRUCTURE.lastIndex = at;
    for (;;) {
      const m = STRUCTURE.exec(this.text);
      if (!m) throw new Malformed();
      const c = m[0];
      if (c === '"') STRUCTURE.lastIndex = this.stringEnd(m.index);
      else if (c === '{' || c === '[') depth++;
      else if (--depth === 0) return m.index + 1;
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
