/**
 * `workmem serve --otlp <url>` from the built CLI, as a service runs it: spans and metrics
 * exported over OTLP/HTTP (JSON, chosen the standard way with OTEL_EXPORTER_OTLP_PROTOCOL) to
 * a receiver this test starts on loopback, and the client's `traceparent` continued: the
 * proxy's spans are in the client's trace, its turn a child of the client's span; the turn's
 * second request (after the client ran its own tool) under that request's span, linked to the turn.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { scripted, startTestServer, type TestServer } from '../../src/testing/index.js';
import { runCli } from '../cli/cliProcess.js';
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
  links?: { traceId: string; spanId: string }[];
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
    const upstream = await startTestServer({
      policy: scripted([{ toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: '{"city":"Lisbon"}' }] }, 'Sunny in Lisbon.']),
    });
    closing.push(upstream);
    // The session stays open between the two requests however slow the machine: one turn, one span.
    const proxy = await serve(['--upstream', upstream.baseURL, '--otlp', otlp.url, '--keep-open', '600000'], {
      WORKMEM_HOME: tempHome(),
      OPENAI_API_KEY: 'sk-proxyKeyOfTheProxyItself01234567',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'proxy-under-test',
    });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const [firstCall, secondCall] = ['00f067aa0ba902b7', '00f067aa0ba902b8'];
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
    ];
    const ask = async (clientSpan: string, messages: unknown[]) => {
      const response = await fetch(`${proxy.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${clientSpan}-01` },
        body: JSON.stringify({ model: 'workmem-test', messages, tools }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { choices: { message: Record<string, unknown> }[] }).choices[0]!.message;
    };
    const user = { role: 'user', content: 'Plan the Halibut launch: what is the weather in Lisbon?' };
    const call = await ask(firstCall, [user]);
    expect(call.tool_calls).toHaveLength(1);
    await ask(secondCall, [user, call, { role: 'tool', tool_call_id: 'call_w', content: 'Halibut weather: sunny' }]);
    expect(await proxy.stop()).toBe(0); // shutting down exports what is buffered

    const spans = otlp.spans();
    const names = JSON.stringify(spans.map((s) => s.name));
    const turns = spans.filter((s) => s.name === 'invoke_agent workmem');
    expect(turns, names).toHaveLength(1);
    const turn = turns[0]!;
    expect(turn.traceId).toBe(traceId);
    expect(turn.parentSpanId).toBe(firstCall);
    expect(attribute(turn, 'workmem.turn.requests')).toBe(2);
    const chats = spans.filter((s) => s.name === 'chat workmem-test');
    expect(chats, names).toHaveLength(2);
    expect(chats[0]!.parentSpanId).toBe(turn.spanId);
    // The turn's second request came with its own traceparent: its call goes there, linked to the turn.
    expect(chats[1]!.parentSpanId).toBe(secondCall);
    expect(chats[1]!.links?.map((l) => l.spanId)).toEqual([turn.spanId]);
    for (const chat of chats) {
      expect(attribute(chat, 'gen_ai.provider.name')).toBe('openai');
      expect(attribute(chat, 'gen_ai.operation.name')).toBe('chat');
    }
    expect(spans.every((s) => s.traceId === traceId)).toBe(true);
    expect(JSON.stringify(spans)).not.toContain('Halibut');
    expect(otlp.metricNames()).toEqual(
      expect.arrayContaining(['gen_ai.client.operation.duration', 'workmem.requests', 'workmem.context.utilization']),
    );
  });

  it('refuses an --otlp that is not a collector URL, with exit code 2, and says so in --help', async () => {
    const bad = await runCli(['serve', '--upstream', 'http://127.0.0.1:9/v1', '--otlp', 'collector:4318'], {
      env: { WORKMEM_HOME: tempHome() },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--otlp needs the collector's http:// or https:// URL");
    const help = await runCli(['serve', '--help']);
    expect(help.stdout).toContain('--otlp <url>');
  });
});
