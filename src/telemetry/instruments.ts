/**
 * The metric instruments, made once per meter: the conventions' two client histograms and
 * workmem's own counters and histograms (names, units and buckets in conventions.ts).
 */
import type { Counter, Histogram, Meter } from '@opentelemetry/api';
import { DURATION_BUCKETS, METRIC, TOKEN_BUCKETS, WM_METRIC } from './conventions.js';

export interface Instruments {
  tokenUsage: Histogram;
  operationDuration: Histogram;
  tokens: Counter;
  requests: Counter;
  compactions: Counter;
  memoryWrites: Counter;
  reminders: Counter;
  remindersHeeded: Counter;
  utilization: Histogram;
  overhead: Histogram;
}

const made = new WeakMap<Meter, Instruments>();

export function instrumentsOf(meter: Meter): Instruments {
  let instruments = made.get(meter);
  if (!instruments) made.set(meter, (instruments = make(meter)));
  return instruments;
}

function make(meter: Meter): Instruments {
  const histogram = (name: string, unit: string, description: string, buckets: number[]): Histogram =>
    meter.createHistogram(name, { unit, description, advice: { explicitBucketBoundaries: buckets } });
  const counter = (name: string, unit: string, description: string): Counter => meter.createCounter(name, { unit, description });
  return {
    tokenUsage: histogram(METRIC.tokenUsage, '{token}', 'Number of input and output tokens used.', TOKEN_BUCKETS),
    operationDuration: histogram(METRIC.operationDuration, 's', 'GenAI operation duration.', DURATION_BUCKETS),
    tokens: counter(
      WM_METRIC.tokens,
      '{token}',
      'Tokens the server reported, by kind (input, cached of input, output) and by reason (turn, summary, background).',
    ),
    requests: counter(WM_METRIC.requests, '{request}', 'Model requests workmem built, by history mode.'),
    compactions: counter(WM_METRIC.compactions, '{compaction}', 'Compactions, by reason.'),
    memoryWrites: counter(WM_METRIC.memoryWrites, '{write}', 'Writes to the working memory that succeeded, by file (overview or detail).'),
    reminders: counter(WM_METRIC.reminders, '{reminder}', 'Reminders to update the working memory, by level and reason.'),
    remindersHeeded: counter(
      WM_METRIC.remindersHeeded,
      '{reminder}',
      'Reminders followed by a write to overview.md before the next reminder.',
    ),
    utilization: histogram(WM_METRIC.utilization, '1', 'Share of the context window a request uses.', [0.2, 0.4, 0.6, 0.75, 0.9, 1]),
    overhead: histogram(
      WM_METRIC.overhead,
      's',
      "workmem's own time per model request: preparing it and recording the answer.",
      [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    ),
  };
}
