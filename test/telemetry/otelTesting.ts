/**
 * The OpenTelemetry SDK's in-memory exporters as a session's providers (never registered
 * globally: the fast tests share one process), and readers of what they hold: the span
 * tree as indented names, the metrics as flat points.
 */
import type { Attributes } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

export interface OtelCapture {
  tracerProvider: BasicTracerProvider;
  meterProvider: MeterProvider;
  spans(): ReadableSpan[];
  points(): Promise<MetricPoint[]>;
  close(): Promise<void>;
}

export interface MetricPoint {
  name: string;
  unit: string;
  attributes: Attributes;
  /** A counter's sum, or a histogram's sum with its count. */
  value: number;
  count?: number;
}

export function otelCapture(): OtelCapture {
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    tracerProvider,
    meterProvider,
    spans: () => spanExporter.getFinishedSpans(),
    async points() {
      metricExporter.reset();
      await reader.forceFlush();
      const out: MetricPoint[] = [];
      for (const resource of metricExporter.getMetrics())
        for (const scope of resource.scopeMetrics)
          for (const metric of scope.metrics)
            for (const point of metric.dataPoints) {
              const v = point.value as number | { sum?: number; count: number };
              out.push({
                name: metric.descriptor.name,
                unit: metric.descriptor.unit,
                attributes: point.attributes,
                ...(typeof v === 'number' ? { value: v } : { value: v.sum ?? 0, count: v.count }),
              });
            }
      return out;
    },
    async close() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** The spans as a tree of names, children in start order, two spaces a level. */
export function spanTree(spans: readonly ReadableSpan[], label: (span: ReadableSpan) => string = (s) => s.name): string {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const children = new Map<string, ReadableSpan[]>();
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId;
    const key = parent && ids.has(parent) ? parent : '';
    children.set(key, [...(children.get(key) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (key: string, depth: number): void => {
    const list = [...(children.get(key) ?? [])].sort((a, b) => hr(a.startTime) - hr(b.startTime));
    for (const span of list) {
      lines.push(`${'  '.repeat(depth)}${label(span)}`);
      walk(span.spanContext().spanId, depth + 1);
    }
  };
  walk('', 0);
  return lines.join('\n');
}

function hr(time: [number, number]): number {
  return time[0] * 1e9 + time[1];
}

/** Every string an exporter would send about the spans: names, attribute values, events, status. */
export function spanStrings(spans: readonly ReadableSpan[]): string[] {
  const out: string[] = [];
  const values = (attributes: Attributes | undefined) => {
    for (const [key, value] of Object.entries(attributes ?? {})) out.push(key, ...[value].flat().map(String));
  };
  for (const span of spans) {
    out.push(span.name, span.status.message ?? '');
    values(span.attributes);
    for (const event of span.events) {
      out.push(event.name);
      values(event.attributes);
    }
  }
  return out;
}
