/**
 * The background summary actor: the summary of the turns a background order names, made with
 * the session's summarizer while the session goes on (no turn waits for it), bounded in time.
 * It writes nothing: the turn that swaps the summary in writes the archive and the log entry
 * (compact.ts), so a summary lost to a crash or a close costs its model calls and nothing else.
 */
import type { BackgroundSummaryInput } from '../../machines/sessionMachine.js';
import type { PreparedSummary } from '../compaction/prepared.js';
import type { BackgroundSummarizer } from '../compaction/summarizer.js';

/** A summary that takes longer than this is given up and tried again later. */
export const BACKGROUND_TIMEOUT_MS = 5 * 60_000;

/** A background summary that failed, and how long it ran first. */
export class BackgroundSummaryError extends Error {
  override name = 'BackgroundSummaryError';
  constructor(
    message: string,
    readonly ms: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export async function runBackgroundSummary(
  input: BackgroundSummaryInput,
  summarize: BackgroundSummarizer | null,
  signal: AbortSignal,
  timeoutMs = BACKGROUND_TIMEOUT_MS,
): Promise<PreparedSummary> {
  const started = performance.now();
  const { order } = input;
  if (!summarize) throw new BackgroundSummaryError('the session has no summarizer', 0);
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  try {
    const { text, usage } = await summarize(
      order.items.filter((item) => !item.pinned),
      bounded,
    );
    return { ...order, summary: text, usage, ms: performance.now() - started };
  } catch (error) {
    const why =
      bounded.aborted && !signal.aborted ? `no summary within ${timeoutMs / 1000} s` : ((error as Error)?.message ?? String(error));
    throw new BackgroundSummaryError(`the background summary failed: ${why}`, performance.now() - started, { cause: error });
  }
}
