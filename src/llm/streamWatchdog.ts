/** The watchdog of a streamed request: the wait for its first output, then the stall allowed between outputs. */
import { LLMError } from './llm.js';
import { firstByteTimeout, type FirstByteAllowance } from './firstByteAllowance.js';

/** What the error classifiers read of a request's watchdog. */
export type WatchdogState = Pick<Watchdog, 'userAborted' | 'timedOut' | 'timeoutError'>;

/** Aborts the request when the caller aborts, or when the server stays silent too long. */
export class Watchdog {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private flowing = false;
  timedOut = false;
  private readonly onAbort = (): void => this.controller.abort();

  constructor(
    private readonly stallMs: number,
    private readonly outer: AbortSignal,
    private readonly firstByte: FirstByteAllowance,
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

  /** Before the request is sent: the first output must come within the allowance. */
  start(): void {
    this.set(this.firstByte.ms);
  }

  /** Real output arrived: from now on, the stall allowance. */
  progress(): void {
    this.flowing = true;
    this.set(this.stallMs);
  }

  /** Stop the request ourselves (not a timeout, not the caller's abort). */
  cut(): void {
    clearTimeout(this.timer);
    this.controller.abort();
  }

  /** The error of the timeout that fired: the first output's wait, or a stall. */
  timeoutError(cause?: unknown): LLMError {
    if (!this.flowing) return firstByteTimeout(this.firstByte, cause);
    return new LLMError('timeout', `no content from the server for ${this.stallMs / 1000} s`, cause === undefined ? {} : { cause });
  }

  /** The SDK ends a stream quietly when it is aborted: make that an error. */
  check(): void {
    if (this.userAborted) throw new LLMError('aborted', 'the request was aborted');
    if (this.timedOut) throw this.timeoutError();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.outer.removeEventListener('abort', this.onAbort);
  }

  private set(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.timedOut = true;
        this.controller.abort();
      },
      Math.min(ms, 2 ** 31 - 1),
    );
  }
}
