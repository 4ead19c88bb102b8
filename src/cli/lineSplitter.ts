/**
 * Bytes in, lines out, split on "\n" only (a trailing "\r" dropped). The pending part of
 * a line is kept as a list of chunks, joined once when its newline arrives, so a long
 * line costs linear time; a line longer than the limit is reported once and discarded up
 * to its newline, without being held. "\n" never occurs inside a UTF-8 sequence, so
 * splitting bytes first and decoding whole lines is exact.
 */
const NEWLINE = 0x0a;

export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;

  constructor(
    private readonly maxBytes: number,
    private readonly on: { line(text: string): void; tooLong(): void },
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let at = chunk.indexOf(NEWLINE); at >= 0; at = chunk.indexOf(NEWLINE, start)) {
      this.take(chunk.subarray(start, at));
      this.finish();
      start = at + 1;
    }
    if (start < chunk.length) this.take(chunk.subarray(start));
  }

  /** The end of input: a last line without a newline still counts. */
  end(): void {
    if (this.pendingBytes > 0) this.finish();
    this.skipping = false;
  }

  private take(piece: Buffer): void {
    if (this.skipping || piece.length === 0) return;
    this.pending.push(piece);
    this.pendingBytes += piece.length;
    if (this.pendingBytes > this.maxBytes) {
      this.pending = [];
      this.pendingBytes = 0;
      this.skipping = true;
      this.on.tooLong();
    }
  }

  private finish(): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    const line = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    this.on.line(line.endsWith('\r') ? line.slice(0, -1) : line);
  }
}
