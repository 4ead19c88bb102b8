/**
 * The shapes telemetry is asked for and handed over in, in workmem's own types: those of
 * `@opentelemetry/api` (an optional peer) never reach a declaration a user compiles against.
 */
import type { SessionHost } from '../../machines/sessionMachine.js';
import type { WorkmemEvent } from '../events.js';
import type { LLM } from '../llm/llm.js';

/** A tracer provider as `@opentelemetry/api` defines one (named structurally: the API is optional). */
export interface TracerProviderLike {
  getTracer(name: string, version?: string, options?: object): unknown;
}
/** A meter provider as `@opentelemetry/api` defines one. */
export interface MeterProviderLike {
  getMeter(name: string, version?: string, options?: object): unknown;
}

/**
 * OpenTelemetry for a session: default, the providers the service registered globally (none
 * registered: off, nothing loaded); `true`: the global ones even if registered later; `false`:
 * off; or the providers to report to.
 */
export type TelemetryOption = boolean | { tracerProvider?: TracerProviderLike; meterProvider?: MeterProviderLike };

/**
 * A session's telemetry as the session wiring sees it (sessionTelemetry.ts implements it), in
 * workmem's own types: the API's never reach a declaration a user compiles against.
 */
export interface SessionTelemetryHooks {
  /** The session's model, its calls traced. */
  wrapModel(llm: LLM): LLM;
  /** The session host, its host-loop calls and memory loads traced. */
  wrapHost(host: SessionHost): SessionHost;
  /** A prompt was queued: its turn's span starts in the context it came in. */
  enqueued(promptId: string): void;
  /** Hears every event the session publishes. */
  listen(event: WorkmemEvent): void;
  /** Ends whatever is open. */
  close(): void;
}

/** Makes each session's telemetry over the same tracer and instruments. */
export interface SessionTelemetrySource {
  forSession(sessionId: string, llm: LLM): SessionTelemetryHooks;
}
