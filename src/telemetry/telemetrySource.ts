/**
 * The telemetry of a process's sessions over one tracer and one set of instruments, from the
 * providers given or, by default, the global ones. This module is what telemetryOption.ts
 * loads: with it, and only then, `@opentelemetry/api`.
 */
import { metrics, trace, type MeterProvider, type TracerProvider } from '@opentelemetry/api';
import { SEMCONV_VERSION } from './conventions.js';
import { instrumentsOf } from './instruments.js';
import { SessionTelemetry } from './sessionTelemetry.js';
import type { MeterProviderLike, SessionTelemetrySource, TracerProviderLike } from './telemetryTypes.js';

export function telemetrySource(tracerProvider?: TracerProviderLike, meterProvider?: MeterProviderLike): SessionTelemetrySource {
  const scope = { schemaUrl: `https://opentelemetry.io/schemas/${SEMCONV_VERSION}` };
  const tracer = ((tracerProvider as TracerProvider | undefined) ?? trace.getTracerProvider()).getTracer('workmem', undefined, scope);
  const meter = ((meterProvider as MeterProvider | undefined) ?? metrics.getMeterProvider()).getMeter('workmem', undefined, scope);
  const instruments = instrumentsOf(meter);
  return { forSession: (sessionId, llm) => new SessionTelemetry(tracer, instruments, sessionId, llm) };
}
