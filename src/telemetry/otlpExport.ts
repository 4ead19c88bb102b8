/**
 * `workmem serve --otlp <url>` and the OTEL_EXPORTER_OTLP_* environment: OpenTelemetry's
 * Node SDK, configured the standard way (the endpoint, headers, protocol, service name,
 * resource attributes, sampler and export interval all from OTEL_* variables), registered
 * globally so that every session of the proxy reports to it. Loaded only then: the SDK
 * (`@opentelemetry/sdk-node`, an optional peer) is imported by nothing else.
 */
import { NodeSDK } from '@opentelemetry/sdk-node';

export interface OtlpExport {
  /** Export what is buffered and stop. */
  shutdown(): Promise<void>;
}

/** `endpoint`: --otlp's URL (the base, as OTEL_EXPORTER_OTLP_ENDPOINT takes it), which wins over the environment. */
export function startOtlpExport(endpoint: string | undefined): OtlpExport {
  if (endpoint) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  // workmem emits spans and metrics, no log records: no logs exporter unless asked for.
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  const sdk = new NodeSDK(process.env.OTEL_SERVICE_NAME ? {} : { serviceName: 'workmem-serve' });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
