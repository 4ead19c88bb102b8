/**
 * `workmem serve --otlp <url>` from the built CLI, as a service runs it: spans and metrics
 * exported over OTLP/HTTP (JSON, chosen the standard way with OTEL_EXPORTER_OTLP_PROTOCOL) to
 * a receiver this test starts on loopback, and the client's `traceparent` continued: the
 * proxy's spans are in the client's trace, its turn a child of the client's span.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { tempHome } from '../helpers.js';
import { serveProcesses } from '../serve/serveProcess.js';

const serve = serveProcesses();
const closing: (Server | TestServer)[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((s) => ('baseURL' in s ? s.close() : new Promise((r) => s.close(r)))));
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver: what was posted to /v1/traces and /v1/metrics, parsed. */
async function receiver(): Promise<{ url: string; spans(): OtlpSpan[]; metricNames(): string[] }> {
  const bodies: { path: string; body: any }[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', body: JSON.parse(raw) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closing.push(server);
  const of = (path: string) => bodies.filter((b) => b.path === path).map((b) => b.body);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => of('/v1/traces').flatMap((b) => b.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans))),
    metricNames: () =>
      of('/v1/metrics').flatMap((b) =>
        b.resourceMetrics.flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics.map((m: any) => m.name))),
      ),
  };
}

const attribute = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
};

describe('workmem serve --otlp', () => {
  it('exports the proxy’s spans and metrics over OTLP/HTTP, in the trace the client’s traceparent names', async () => {
    const otlp = await receiver();
    const upstream = await startTestServer({ policy: protocolFollower({ seed: 1 }) });
    closing.push(upstream);
    const proxy = await serve(['--upstream', upstream.baseURL, '--otlp', otlp.url, '--keep-open', '0'], {
      WORKMEM_HOME: tempHome(),
      OPENAI_API_KEY: 'sk-proxyKeyOfTheProxyItself01234567',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'proxy-under-test',
    });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpan = '00f067aa0ba902b7';
    const response = await fetch(`${proxy.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${clientSpan}-01` },
      body: JSON.stringify({ model: 'workmem-test', messages: [{ role: 'user', content: 'Plan the Halibut launch.' }] }),
    });
    expect(response.status).toBe(200);
    await response.json();
    expect(await proxy.stop()).toBe(0); // shutting down exports what is buffered

    const spans = otlp.spans();
    const turn = spans.find((s) => s.name === 'invoke_agent workmem');
    expect(turn, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(turn!.traceId).toBe(traceId);
    expect(turn!.parentSpanId).toBe(clientSpan);
    const chat = spans.find((s) => s.name === 'chat workmem-test')!;
    expect(chat.traceId).toBe(traceId);
    expect(chat.parentSpanId).toBe(turn!.spanId);
    expect(attribute(chat, 'gen_ai.provider.name')).toBe('openai');
    expect(attribute(chat, 'gen_ai.operation.name')).toBe('chat');
    expect(spans.every((s) => s.traceId === traceId)).toBe(true);
    expect(JSON.stringify(spans)).not.toContain('Halibut');
    expect(otlp.metricNames()).toEqual(
      expect.arrayContaining(['gen_ai.client.operation.duration', 'workmem.requests', 'workmem.context.utilization']),
    );
  });
});
