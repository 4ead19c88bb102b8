/**
 * A proxy request run in the trace its client named: the `traceparent` (and `tracestate`,
 * baggage) of its headers, read by the propagators the service registered, become the
 * context the session's spans start in. Loaded only when telemetry is on.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { context, propagation, ROOT_CONTEXT } from '@opentelemetry/api';

export function inClientContext<T>(headers: IncomingHttpHeaders, run: () => T): T {
  return context.with(propagation.extract(ROOT_CONTEXT, headers), run);
}
