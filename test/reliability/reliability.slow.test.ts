/**
 * A fast subset of `npm run reliability` (docs/reliability.md has the full matrix): a few
 * cases of each kind — SIGKILL crashes, lock races, injected disk faults, every hostile
 * path, corrupted streams, secrets, a short soak. Every case must survive and nothing may
 * be lost; a failure prints the case, with its seed where it has one.
 */
import { describe, expect, it } from 'vitest';
import { cliCases } from './cli.js';
import { crashTrials } from './crash.js';
import { crashManyTrials } from './crashMany.js';
import { damageCases } from './damage.js';
import { diskCases } from './disk.js';
import { guardCases } from './guard.js';
import { hostileCases } from './hostile.js';
import { llmCases } from './llm.js';
import { lockCases } from './lock.js';
import type { FamilyResult } from './report.js';
import { secretCases } from './secrets.js';
import { soak } from './soak.js';
import { storeCases } from './store.js';
import { streamCases } from './streams.js';
import { vizCases } from './viz.js';

function expectAllSurvived(result: FamilyResult, atLeast: number): void {
  const tried = result.rows.reduce((n, r) => n + r.tried, 0);
  const survived = result.rows.reduce((n, r) => n + r.survived, 0);
  const lost = result.rows.reduce((n, r) => n + r.lost, 0);
  const report = result.failures.map((f) => `${f.fault}: ${f.detail}`).join('\n');
  expect(tried).toBeGreaterThanOrEqual(atLeast);
  expect(report).toBe('');
  expect(survived).toBe(tried);
  expect(lost).toBe(0);
}

describe('reliability (fast subset)', () => {
  it('SIGKILL at random and chosen points: every session reopens whole', async () => {
    expectAllSurvived(await crashTrials(11, 7), 11);
  });

  it('SIGKILL with 20 sessions in flight in one process: every session reopens whole', async () => {
    expectAllSurvived(await crashManyTrials(2, 20, 3), 2);
  });

  it('one writer per session: refused by pid, taken over by heartbeat, 30 races for a stale lock with one holder each', async () => {
    expectAllSurvived(await lockCases(30, 1), 40);
  });

  it('saved outputs keep distinct names, reserved names, temp-like names, a damaged log line and meta.json', async () => {
    expectAllSurvived(await damageCases(), 12);
  });

  it('disk full, read-only and I/O errors on every kind of write: clear errors, nothing acknowledged lost', async () => {
    expectAllSurvived(await diskCases({ everyCode: false, realTmpfs: false }), 11);
  });

  it('hostile paths, 10 MB arguments, deep nesting and prompt injection are refused or contained', async () => {
    expectAllSurvived(await hostileCases(), 50 * 4);
  });

  it('corrupted SSE streams: no crash, no unhandled rejection, a clear error, a consistent log', async () => {
    expectAllSurvived(await streamCases(40, 101), 40);
  });

  it('API keys appear in no file, event, result or CLI output; files 0600, folders 0700', async () => {
    expectAllSurvived(await secretCases(), 7);
  });

  it('CLI and RPC: no escape sequence reaches the terminal, keys masked, a 17 MB RPC line refused', async () => {
    expectAllSurvived(await cliCases({ lineSizesMB: [17] }), 11);
  });

  it('one-class runs are counted in bounded time; endless, keep-alive and finish-only streams end; ids, names, error texts and the first wait are bounded; streamed keys and URL passwords are masked', async () => {
    expectAllSurvived(await llmCases(), 20);
  });

  it('the visualizer: foreign Host or Origin, no token, traversal, forged records, a squatter: nothing read, nothing injected', async () => {
    expectAllSurvived(await vizCases(), 140);
  });

  it('guard: huge tool names, answers and prompts bounded, a write quota, masked ids, look-alike tags, no read outside', async () => {
    expectAllSurvived(await guardCases({ reads: 300, fast: true }), 300);
  });

  it('a short soak: every turn completes, the heap after GC grows no faster than the session retains, descriptors stay flat', async () => {
    // The heap is measured after a forced GC (vitest.config.ts passes --expose-gc), so the verdict does not depend on load.
    expect(typeof (globalThis as { gc?: unknown }).gc, 'gc() must be exposed: execArgv --expose-gc').toBe('function');
    const result = await soak(600, { every: 20, warmupTurns: 200 });
    expectAllSurvived(result, 3);
    expect(result.points.filter((p) => p.turn > 200)).toHaveLength(20);
  });

  it('state store: writers SIGKILLed while sharing state/, torn index and tracker files', async () => {
    expectAllSurvived(await storeCases(4), 5);
  });
});
