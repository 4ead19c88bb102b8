/**
 * A request's messages converted to a framework's types, kept by place from one request to
 * the next: a request holds the same history messages (the same objects) call after call,
 * and at 10k messages converting them all again was most of what a middleware added to a
 * model call. Comparing by place reads two arrays, where a lookup by message (a WeakMap)
 * touches each message. Used by one model's or one session's requests; the conversions are
 * handed out as they are, call after call (the arrays that hold them never are).
 */
import type { ChatMessage } from '../history/messages.js';

export class ConversionsByPlace<T> {
  private readonly from: (ChatMessage | undefined)[] = [];
  private readonly made: (T | undefined)[] = [];

  /** The conversion made at `index` last time, if it was of this message. */
  take(index: number, message: ChatMessage): T | undefined {
    return this.from[index] === message ? this.made[index] : undefined;
  }

  keep(index: number, message: ChatMessage, made: T): void {
    this.from[index] = message;
    this.made[index] = made;
  }

  /** The request had `length` messages: places past it are forgotten. */
  end(length: number): void {
    this.from.length = this.made.length = length;
  }
}
