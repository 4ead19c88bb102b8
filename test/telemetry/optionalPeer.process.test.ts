/**
 * `@opentelemetry/api` is an optional peer, loaded only for a service that uses it: a
 * session in a process that registered no provider imports nothing of OpenTelemetry (the
 * built package, in a child process of its own, its module cache read after a turn), and one
 * that registered a global tracer provider reports to it without a line of configuration.
 */
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempHome } from '../helpers.js';
import { builtFile } from '../reliability/built.js';

function runModule(source: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
      env: { PATH: process.env.PATH, WORKMEM_HOME: tempHome() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const workmem = pathToFileURL(builtFile('src/index.js')).href;
const turn = `
  const session = await createSession({ llm: scriptedModel([{ text: 'hello' }]), cwd: '/work/project' });
  const result = await session.prompt('hi');
  await session.close();
  if (result.status !== 'done') throw new Error(result.status);
`;

describe('OpenTelemetry as an optional peer', () => {
  it('without a registered provider, a turn loads no OpenTelemetry module at all', async () => {
    const { code, stdout, stderr } = await runModule(`
      import { createRequire } from 'node:module';
      import { createSession, scriptedModel } from '${workmem}';
      ${turn}
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((p) => p.includes('@opentelemetry'));
      console.log(JSON.stringify({ loaded, slot: Symbol.for('opentelemetry.js.api.1') in globalThis }));
    `);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ loaded: [], slot: false });
  });

  it('with a global tracer provider registered by the service, the session reports to it unasked', async () => {
    const { code, stdout, stderr } = await runModule(`
      import { createRequire } from 'node:module';
      import { trace } from '@opentelemetry/api';
      import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
      import { createSession, scriptedModel } from '${workmem}';
      const exporter = new InMemorySpanExporter();
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
      ${turn}
      console.log(JSON.stringify(exporter.getFinishedSpans().map((s) => s.name)));
    `);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual(['read_memory', 'chat scripted', 'invoke_agent workmem']);
  });
});
