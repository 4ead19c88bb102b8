/**
 * The records each live session has streamed since it connected, so that a page that
 * opens (or reloads) in the middle of a session gets them all: trace.jsonl lags behind
 * the stream (the recorder writes within 100 ms of a turn's end), so the file alone misses
 * the latest records and the stream alone the earlier ones. A session's records are
 * numbered in the order they came; a page reads the trace and this run's stream, then
 * applies the streamed records numbered from the count it was given, and reads again on a gap.
 */
import type { TraceRecord } from '../trace/traceRecorder.js';

/** Beyond this many records a session's stream is no longer kept whole (the file is read alone). */
const KEEP_LIMIT = 200_000;

interface Stream {
  records: TraceRecord[];
  /** Records counted so far (more than `records` once past the limit). */
  count: number;
  whole: boolean;
}

export class LiveRecords {
  private readonly streams = new Map<string, Stream>();

  open(sessionId: string): void {
    this.streams.set(sessionId, { records: [], count: 0, whole: true });
  }

  close(sessionId: string): void {
    this.streams.delete(sessionId);
  }

  /** Keeps a record; returns its number in the session's stream. */
  add(sessionId: string, record: TraceRecord): number {
    const stream = this.streams.get(sessionId);
    if (!stream) return -1;
    if (stream.whole && stream.records.length < KEEP_LIMIT) stream.records.push(record);
    else if (stream.whole) {
      stream.whole = false;
      stream.records = [];
    }
    return stream.count++;
  }

  /**
   * What a live session has streamed in this run (from its header, unless more than the
   * limit came: then none) and the number of the next record; null for a session not live.
   * The page puts it after what the trace file holds of earlier runs (the file holds a prefix
   * of this run: it lags up to a turn behind).
   */
  snapshot(sessionId: string): { records: TraceRecord[]; next: number } | null {
    const stream = this.streams.get(sessionId);
    if (!stream) return null;
    return { records: stream.whole ? stream.records.slice() : [], next: stream.count };
  }
}
