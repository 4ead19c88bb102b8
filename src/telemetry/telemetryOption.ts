/**
 * Whether a session reports to OpenTelemetry, decided when it is opened, and the one place
 * that loads the telemetry (and with it `@opentelemetry/api`, an optional peer). Without a
 * provider nothing is imported and nothing is added to a request's path: the check reads
 * the slot the OpenTelemetry API keeps on globalThis, which exists only once a service has
 * registered a global tracer or meter provider (with any copy of the API, major version 1).
 */
import type { SessionTelemetrySource, TelemetryOption } from './telemetryTypes.js';

export type {
  MeterProviderLike,
  SessionTelemetryHooks,
  SessionTelemetrySource,
  TelemetryOption,
  TracerProviderLike,
} from './telemetryTypes.js';

const GLOBAL_SLOT = Symbol.for('opentelemetry.js.api.1');

/** A global tracer or meter provider has been registered through `@opentelemetry/api` 1.x. */
export function globalProviderRegistered(): boolean {
  const slot = (globalThis as Record<symbol, { trace?: unknown; metrics?: unknown } | undefined>)[GLOBAL_SLOT];
  return !!(slot?.trace || slot?.metrics);
}

/**
 * The session's telemetry source, or null when it reports nothing (the module is never
 * loaded then). `true` asks for the global providers even before they are registered.
 */
export async function telemetryFor(
  option: TelemetryOption | undefined,
  warn: ((message: string) => void) | undefined,
): Promise<SessionTelemetrySource | null> {
  if (option === false) return null;
  const given = typeof option === 'object' ? option : null;
  if (option === undefined && !globalProviderRegistered()) return null;
  try {
    const { telemetrySource } = await import('./telemetrySource.js');
    return telemetrySource(given?.tracerProvider, given?.meterProvider);
  } catch (error) {
    // A provider is registered but this copy of workmem cannot load the API: say so, run without.
    warn?.(
      `OpenTelemetry is registered but @opentelemetry/api could not be loaded (${(error as Error)?.message ?? error}); no spans or metrics`,
    );
    return null;
  }
}

/**
 * Runs a proxy request in the context its client's traceparent names, when telemetry is on
 * (null otherwise: the request runs as it is, nothing loaded).
 */
export async function clientContextFor(
  option: TelemetryOption | undefined,
): Promise<(<T>(headers: import('node:http').IncomingHttpHeaders, run: () => T) => T) | null> {
  if (option === false || (option === undefined && !globalProviderRegistered())) return null;
  try {
    return (await import('./clientContext.js')).inClientContext;
  } catch {
    return null; // the session says why (telemetryFor)
  }
}
