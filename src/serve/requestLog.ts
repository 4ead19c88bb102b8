/**
 * One line per request the proxy serves, for the person watching it (`workmem serve` writes
 * them on stderr; --quiet turns them off): the route, the status, the session and how it was
 * found, the upstream calls, the tokens in, cached and out, the time, and what failed. Never
 * a key and never a message's text: an error's words are masked and shortened.
 *
 *   POST /v1/chat/completions 200 session=3f2a9c1e how=continues calls=2 in=1204 cached=1024 out=38 ms=842
 */
import type { Answer } from './exchange.js';

const MAX_ERROR = 200;

export class RequestLogEntry {
  private readonly started = performance.now();
  private how = '';
  private id: string | null = null;
  private answer: Answer | null = null;
  private error: string | null = null;
  private status: number | null = null;

  constructor(
    private readonly method: string,
    private readonly path: string,
  ) {}

  /** How its session was found: header, user, continues, opens, parts; or first, side (passed through). */
  placed(how: string): void {
    this.how = how;
  }

  session(id: string | null): void {
    this.id = id;
  }

  answered(answer: Answer): void {
    this.answer = answer;
  }

  /** The upstream (or the session) failed: the status the client got and the reason, masked. */
  failed(status: number, reason: string): void {
    this.status = status;
    this.error = reason;
  }

  /** A reason the request was refused or failed, from the error the client was sent. */
  refused(reason: string): void {
    this.error ??= reason;
  }

  line(status: number): string {
    const parts = [`${this.method} ${this.path}`, String(this.status ?? status)];
    if (this.how) parts.push(`session=${this.id ? this.id.slice(0, 8) : '-'}`, `how=${this.how}`);
    const a = this.answer;
    if (a) {
      parts.push(`calls=${a.calls}`);
      if (a.usage) {
        parts.push(`in=${a.usage.prompt_tokens}`);
        const cached = a.usage.prompt_tokens_details?.cached_tokens;
        if (typeof cached === 'number') parts.push(`cached=${cached}`);
        parts.push(`out=${a.usage.completion_tokens}`);
      }
    }
    parts.push(`ms=${Math.round(performance.now() - this.started)}`);
    if (this.error) parts.push(`error=${JSON.stringify(oneLine(this.error))}`);
    return parts.join(' ');
  }
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > MAX_ERROR ? `${line.slice(0, MAX_ERROR - 1)}…` : line;
}
