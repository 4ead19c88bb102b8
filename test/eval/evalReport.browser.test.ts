/**
 * The HTML report of `workmem eval --html` in real headless Chromium, offline: the page
 * loads nothing but itself, shows the two per-arm tables and the three plots (accuracy by
 * category, input tokens per turn, cached share over the session, a bar or a line per arm),
 * and the conversation picker switches the per-turn plots. A screenshot goes to
 * test/artifacts/eval-report.png (docs/eval-report.png is one of these, committed).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/cliIO.js';
import { runCli } from '../../src/cli/main.js';
import { tempHome } from '../helpers.js';
import { launchChromium } from '../viz/vizProbes.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');
const home = tempHome();
const page = join(home, 'report.html');
let browser: Browser;

beforeAll(async () => {
  const sink = new PassThrough().resume();
  const io = { stdin: process.stdin, stdout: sink, stderr: sink, env: { WORKMEM_HOME: home }, cwd: home } as unknown as CliIO;
  expect(await runCli(['eval', '--model', 'testing:forgetful', '--suite', 'small', '--html', page], io)).toBe(0);
  browser = await launchChromium();
});

afterAll(async () => browser?.close());

describe('the HTML report', () => {
  it('is one file that loads nothing else', () => {
    const html = readFileSync(page, 'utf8');
    expect(html).not.toMatch(/<(?:link|img|iframe)\b|<script[^>]+src=|@import|url\(/i);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });

  it('opens offline in Chromium with the tables and the plots', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await context.setOffline(true);
    const requested: string[] = [];
    context.on('request', (request) => requested.push(request.url()));
    const tab = await context.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(error.message));
    await tab.goto(pathToFileURL(page).href);
    expect(requested).toEqual([pathToFileURL(page).href]);
    expect(errors).toEqual([]);

    const tables = tab.locator('table');
    // Accuracy, the bill, the upkeep.
    await expect.poll(() => tables.count()).toBe(3);
    for (const i of [0, 1, 2]) expect(await tables.nth(i).locator('tr').count(), `table ${i + 1}: a head and 4 arms`).toBe(5);
    expect(await tables.nth(0).innerText()).toContain('early-fact');
    expect(await tables.nth(1).innerText()).toMatch(/per right answer[\s\S]*requests \/ turn/);
    expect(await tables.nth(2).innerText()).toMatch(/peer: summarise at 75 %[\s\S]*summary/);

    const accuracy = tab.locator('figure', { hasText: 'Accuracy by category' });
    expect(await accuracy.isVisible()).toBe(true);
    expect(await accuracy.locator('rect').count(), 'a bar per arm and category').toBe(4 * 5);
    const visible = tab.locator('section.conversation:visible');
    expect(await visible.count()).toBe(1);
    expect(await visible.locator('figure').allInnerTexts()).toEqual([
      expect.stringContaining('Input tokens per turn: trip-lisbon-small'),
      expect.stringContaining('Cached share of input so far: trip-lisbon-small'),
    ]);
    expect(await visible.locator('polyline').count(), 'a line per arm in each plot').toBe(8);
    const box = await visible.locator('svg').first().boundingBox();
    expect(box!.width).toBeGreaterThan(300);

    mkdirSync(ARTIFACTS, { recursive: true });
    await tab.screenshot({ path: join(ARTIFACTS, 'eval-report.png'), fullPage: true });

    await tab.selectOption('#conversation', 'renovation-small');
    expect(await tab.locator('section.conversation:visible figure').first().innerText()).toContain(
      'Input tokens per turn: renovation-small',
    );
    expect(await tab.locator('section.conversation:visible').count()).toBe(1);
    await context.close();
  });
});
