/// <reference lib="dom" />
/**
 * The visualizer: the statechart drawn from the machines, the trace, and the page in a
 * real headless Chromium (playwright-core, /usr/bin/chromium) on a recorded demo session
 * and on a session running live. Screenshots go to test/artifacts/ (not committed).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createMachine } from 'xstate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnMachine } from '../machines/turnMachine.js';
import { runDemo } from '../src/cli/demo.js';
import type { CliIO } from '../src/cli.js';
import { scriptedModel } from '../src/scriptedModel.js';
import { openSession } from '../src/session.js';
import { chartOf, renderSvg, toDot } from '../src/statechart.js';
import { readTrace, startVizServer, type VizServer } from '../src/vizServer.js';
import type { TraceRecord } from '../src/traceRecorder.js';
import { newSession, tempHome } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(import.meta.dirname, 'artifacts');

describe('the statechart comes from the machine definitions', () => {
  it('every state and transition of the turn machine is in the diagram, with stable ids', async () => {
    const model = chartOf(turnMachine);
    const svg = await renderSvg(toDot(model));
    for (const s of model.states.filter((s) => s.parent !== null)) expect(svg).toContain(`id="state:${s.id}"`);
    for (const t of model.transitions) expect(svg).toContain(`id="t:${t.id}`);
    expect(model.transitions.find((t) => t.source === 'turn.maybeCompact' && t.guard === 'overThreshold')?.label).toBe('always');
    expect(model.states.find((s) => s.id === 'turn.stream')?.invokes).toEqual(['llm']);
  });

  it('adding a state to a machine adds it to the diagram, with no other edit', async () => {
    const config = turnMachine.config as { states: Record<string, unknown> };
    const extended = createMachine({ ...config, states: { ...config.states, reviewing: { on: { APPROVE: 'done' } } } } as never);
    const before = toDot(chartOf(turnMachine));
    const after = toDot(chartOf(extended));
    expect(before).not.toContain('turn.reviewing');
    expect(after).toContain('"turn.reviewing" [id="state:turn.reviewing"');
    expect(after).toMatch(/"turn\.reviewing" -> "turn\.done" \[id="t:turn\.reviewing\|APPROVE\|0", label="APPROVE"/);
    expect(await renderSvg(after)).toContain('id="state:turn.reviewing"');
  });
});

describe('traces', () => {
  it('a missing, damaged or older trace is reported plainly, and what can be read is kept', () => {
    const home = tempHome();
    expect(readTrace(join(home, 'nope.jsonl'))).toEqual({ records: [], problems: [expect.stringMatching(/no trace\.jsonl/)] });
    const path = join(home, 'trace.jsonl');
    writeFileSync(
      path,
      [
        '{"k":"header","format":0,"sessionId":"x","ts":1,"resumed":false}',
        '{"k":"step","ts":2,"machine":"turn"',
        '{"k":"event","ts":3,"event":{"type":"turn_end"}}',
        '',
      ].join('\n'),
    );
    const { records, problems } = readTrace(path);
    expect(records.map((r) => r.k)).toEqual(['header', 'event']);
    expect(problems).toEqual([
      expect.stringMatching(/trace format 0 \(this visualizer reads format 1\)/),
      'line 2 of trace.jsonl is damaged and was skipped',
    ]);
  });
});

describe('the viz server', () => {
  it('refuses a port in use with a clear message and answers unknown sessions with 404', async () => {
    const busy = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => busy.once('listening', r));
    const port = (busy.address() as { port: number }).port;
    await expect(startVizServer({ home: tempHome(), port })).rejects.toThrow(
      `port ${port} is in use (another workmem viz?); choose another with --port`,
    );
    busy.close();
    const server = await startVizServer({ home: tempHome() });
    const response = await fetch(`${server.url}/api/sessions/deadbeef/trace`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: expect.stringMatching(/no session with id deadbeef/) });
    for (const asset of ['/', '/app.js', '/style.css']) expect((await fetch(server.url + asset)).status).toBe(200);
    await server.close();
  });
});

const hasChromium = existsSync(CHROMIUM);
describe.runIf(hasChromium || process.env.CI)('the page, in headless Chromium', () => {
  let browser: Browser;
  let server: VizServer;
  let home: string;
  let sessionId: string;
  let records: TraceRecord[];

  beforeAll(async () => {
    expect(hasChromium, `${CHROMIUM} is missing: .ci/run installs Debian's chromium`).toBe(true);
    mkdirSync(ARTIFACTS, { recursive: true });
    home = tempHome();
    const sink = new PassThrough().resume();
    const io = { stdin: process.stdin, stdout: sink, stderr: sink, env: {}, cwd: '/demo' } as unknown as CliIO;
    const demo = await runDemo(io, { quiet: true, home, showHome: false });
    sessionId = demo.sessionId;
    records = readTrace(join(demo.sessionDir, 'trace.jsonl')).records;
    server = await startVizServer({ home });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(query: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
    // Offline: any request that does not go to our own server is an error.
    await page.route('**/*', (route) =>
      route.request().url().startsWith(server.url)
        ? route.continue()
        : (errors.push(`external request: ${route.request().url()}`), route.abort()),
    );
    await page.goto(`${server.url}/${query}`);
    await page.waitForSelector('#chart svg');
    return { page, errors };
  }

  const steps = () => records.filter((r): r is Extract<TraceRecord, { k: 'step' }> => r.k === 'step');

  it('renders every state of the turn machine, and replay moves the highlight to the expected state', async () => {
    const { page, errors } = await open(`?session=${sessionId}`);
    await page.waitForFunction(() => document.querySelector('#position')?.textContent !== '0 / 0');
    for (const s of chartOf(turnMachine).states.filter((s) => s.parent !== null)) {
      expect(await page.locator(`[id="state:${s.id}"]`).count(), s.id).toBe(1);
    }
    expect(await page.textContent('#position')).toBe(`${steps().length} / ${steps().length}`);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-last-step.png') });

    // Step to the first time the turn machine enters runTools, then one step on.
    const target = steps().findIndex((s) => s.machine === 'turn' && s.value === 'runTools');
    await page.focus('body');
    await page.keyboard.press('Home');
    expect(await page.textContent('#position')).toBe(`1 / ${steps().length}`);
    await page.locator('#slider').evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input'));
    }, target);
    expect(await page.locator('#chart .node.active').getAttribute('id')).toBe('state:turn.runTools');
    expect(await page.textContent('#step-event')).toBe('done: llm');
    expect(await page.locator('#chart .edge.last').getAttribute('id')).toBe('t:turn.stream|xstate.done.actor.llm|0');
    const next = steps().findIndex((s, i) => i > target && s.machine === 'turn');
    for (let i = target; i < next; i++) await page.keyboard.press('ArrowRight');
    const expected = steps()[next]!.value as string;
    expect(await page.locator('#chart .node.active').getAttribute('id')).toBe(`state:turn.${expected}`);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-replay.png') });

    // The other machines are drawn from their definitions too.
    await page.click('#machines button[data-machine="historyMode"]');
    expect(await page.locator('[id="state:historyMode.auto.phase2"]').count()).toBe(1);
    await page.keyboard.press('End');
    expect(await page.locator('#chart .node.active').getAttribute('id')).toBe('state:historyMode.auto.phase2');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the timeline has one point per request, with markers, and the memory panel shows the diff after a write', async () => {
    const { page, errors } = await open(`?session=${sessionId}`);
    await page.waitForSelector('#timeline .point');
    const requests = records.filter((r) => r.k === 'event' && r.event.type === 'prompt_built').length;
    expect(await page.locator('#timeline .point').count()).toBe(requests);
    expect(await page.locator('#timeline .marker.compaction').count()).toBe(1);
    expect(await page.locator('#timeline .marker.mode').count()).toBe(1);
    expect(await page.locator('#timeline .marker.reminder').count()).toBeGreaterThan(0);
    expect(await page.locator('#timeline .point').first().locator('title').textContent()).toMatch(
      /^request 1 \(turn 1, request 1, phase1\): [\d,]+ tokens, \d+ % of the window$/,
    );

    // Just after the first memory write: the new facts are marked as added.
    const firstWrite = records.findIndex((r) => r.k === 'memory' && r.version > 1);
    const stepAfter = records.slice(0, firstWrite).filter((r) => r.k === 'step').length;
    await page.locator('#slider').evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input'));
    }, stepAfter);
    const added = await page.locator('#memory .add').allTextContents();
    expect(added).toEqual(expect.arrayContaining(['+ - name: Ada', '+ - release deadline: June 30']));
    expect(await page.locator('#memory .del').count()).toBeGreaterThan(0);
    expect(await page.textContent('#memory-caption')).toMatch(/^version 2 of \d+/);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-memory-diff.png') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a session running live updates the open page', async () => {
    const llm = scriptedModel([
      {
        toolCalls: [
          {
            name: 'write',
            arguments: {
              path: 'working-memory/overview.md',
              content: '# Working Memory\n\n## Known facts\n- live: yes, streaming to the page\n',
            },
          },
        ],
      },
      { text: 'Live!' },
    ]);
    const session = await newSession({ llm, home, visualizer: server.port });
    const { page, errors } = await open(`?session=${session.id}`);
    await page.waitForFunction((id) => document.querySelector('#live')?.textContent?.includes(id.slice(0, 8)), session.id);
    const before = await page.textContent('#position');
    expect(await page.locator('#timeline .point').count()).toBe(0);
    await session.prompt('Stream to the page, please.');
    await page.waitForFunction(() => document.querySelectorAll('#timeline .point').length === 2);
    await page.waitForFunction(() => document.querySelector('#chart .node.active')?.id === 'state:turn.done');
    expect(await page.textContent('#position')).not.toBe(before);
    expect(await page.locator('#memory .add').allTextContents()).toContain('+ - live: yes, streaming to the page');
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-live.png') });
    await session.close();
    await page.waitForFunction(() => document.querySelector('#live')?.textContent === '● live: none');
    expect(errors).toEqual([]);
    await page.close();
    // What streamed live is also in the trace on disk.
    const reopened = await openSession(session.id, { llm: scriptedModel([]), home, env: {}, trace: false });
    expect(readFileSync(join(reopened.dir, 'trace.jsonl'), 'utf8')).toContain('Stream to the page, please.');
    await reopened.close();
  });

  it('an unknown session id or a session without a trace is said plainly on the page', async () => {
    const { page } = await open('?session=deadbeef');
    await page.waitForSelector('#problems:not([hidden])');
    expect(await page.textContent('#problems')).toMatch(/no session with id deadbeef/);
    const untraced = await newSession({ llm: scriptedModel([]), home, trace: false });
    await untraced.close();
    await page.goto(`${server.url}/?session=${untraced.id}`);
    await page.waitForSelector('#problems:not([hidden])');
    expect(await page.textContent('#problems')).toMatch(/has no trace\.jsonl/);
    await page.close();
  });
});
