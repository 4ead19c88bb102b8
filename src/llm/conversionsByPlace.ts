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

  /** `message`, at `index` of this request, converted: the last request's conversion if it held the same message there. */
  at(index: number, message: ChatMessage, convert: (message: ChatMessage, index: number) => T): T {
    if (this.from[index] === message) return this.made[index]!;
    const made = convert(message, index);
    this.from[index] = message;
    this.made[index] = made;
    return made;
  }

  /** The request had `length` messages: places past it are forgotten. */
  end(length: number): void {
    this.from.length = this.made.length = length;
  }
}
