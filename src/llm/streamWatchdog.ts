/** The stall watchdog of a streamed request. */
import { LLMError } from './llm.js';

/** Aborts the request when the caller aborts, or when the server goes silent too long. */
export class Watchdog {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  timedOut = false;
  private readonly onAbort = (): void => this.controller.abort();

  constructor(
    private readonly ms: number,
    private readonly outer: AbortSignal,
  ) {
    if (outer.aborted) this.controller.abort();
    else outer.addEventListener('abort', this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get userAborted(): boolean {
    return this.outer.aborted;
  }

  /** Stop the request ourselves (not a timeout, not the caller's abort). */
  cut(): void {
    clearTimeout(this.timer);
    this.controller.abort();
  }

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.ms);
  }

  /** The SDK ends a stream quietly when it is aborted: make that an error. */
  check(): void {
    if (this.userAborted) throw new LLMError('aborted', 'the request was aborted');
    if (this.timedOut) throw new LLMError('timeout', `no content from the server for ${this.ms / 1000} s`);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.outer.removeEventListener('abort', this.onAbort);
  }
}
