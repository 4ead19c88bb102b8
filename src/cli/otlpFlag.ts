/**
 * `--otlp <url>` of workmem serve, or the standard OTEL_EXPORTER_OTLP_*ENDPOINT variables:
 * spans and metrics exported over OTLP (docs/observability.md). The SDK loads only then, and
 * a missing one is named with the command that installs it.
 */
import type { OtlpExport } from '../telemetry/otlpExport.js';
import type { Flags } from './cliIO.js';
import { UsageError } from './usageError.js';

const ENDPOINTS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'];

/** The export asked for, started; null when none is (or OTEL_SDK_DISABLED=true). */
export async function startOtlp(flags: Flags, env: NodeJS.ProcessEnv): Promise<OtlpExport | null> {
  const flag = flags.otlp;
  if (flag !== undefined && (typeof flag !== 'string' || !/^https?:\/\/[^/]/.test(flag.trim())))
    throw new UsageError(`--otlp needs the collector's http:// or https:// URL (e.g. http://127.0.0.1:4318), got ${JSON.stringify(flag)}`);
  if (flag === undefined && !ENDPOINTS.some((name) => env[name]?.trim())) return null;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  let module: typeof import('../telemetry/otlpExport.js');
  try {
    module = await import('../telemetry/otlpExport.js');
  } catch (error) {
    throw new UsageError(
      `OTLP export needs OpenTelemetry's SDK beside workmem: npm install @opentelemetry/api @opentelemetry/sdk-node (${(error as Error).message.split('\n')[0]})`,
    );
  }
  return module.startOtlpExport(typeof flag === 'string' ? flag.trim().replace(/\/+$/, '') : undefined);
}
