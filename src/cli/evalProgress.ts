/**
 * `workmem eval`'s progress bar on a terminal: how far the run is, where, and an ETA from
 * the pace so far; redrawn at most five times a second on one line of stderr, and cleared
 * at the end. Off a terminal it draws nothing.
 */
import type { EvalProgress } from '../eval/index.js';

const WIDTH = 24;
const EVERY_MS = 200;

/** A progress bar on `stream` (a no-op when it is not a terminal). */
export function progressBar(stream: NodeJS.WriteStream, now: () => number = Date.now): { update(p: EvalProgress): void; clear(): void } {
  if (!stream.isTTY) return { update: () => {}, clear: () => {} };
  const started = now();
  let drawn = 0;
  let shown = false;
  return {
    update(p) {
      const t = now();
      if (t - drawn < EVERY_MS) return;
      drawn = t;
      shown = true;
      const share = p.total ? p.done / p.total : 0;
      const filled = Math.round(share * WIDTH);
      const eta = p.done ? ((t - started) / p.done) * (p.total - p.done) : null;
      const line =
        `[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${Math.floor(share * 100)} % · ` +
        `${p.conversation} (${p.index + 1}/${p.conversations}) · ${p.arm} · turn ${p.turn + 1} · ETA ${eta === null ? '…' : duration(eta)}`;
      stream.write(`\r\u001b[2K${line.slice(0, Math.max(20, (stream.columns ?? 100) - 1))}`);
    },
    clear() {
      if (shown) stream.write('\r\u001b[2K');
    },
  };
}

/** 95_000 → "1m 35s". */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
