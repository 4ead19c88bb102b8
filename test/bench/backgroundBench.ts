/**
 * Background compaction (issue 41): the time workmem adds to a turn over a long session that
 * compacts several times, with the summarizer 2 s away, beside a session that never compacts.
 * Three sessions in one run, each on a test server of its own in a child process (the model is
 * elsewhere, as a hosted one is), their turns alternated (the machine's load falls on all three
 * alike):
 * - never compacts: a window so large that no threshold is reached;
 * - before: the fallback summarises when it compacts (backgroundThreshold false: the turn
 *   that reaches 75 % waits for the summarizer);
 * - after: the summary is prepared in the background (the default).
 * A model request takes `modelMs` (a hosted model's time for a short answer is seconds: this
 * is the harder case, less time for the summary to be ready); what workmem adds to a turn is
 * its wall time less the time its own model requests took. Phase 1 is pinned: the whole
 * history is sent, so the fallback, not the horizon, keeps it in the window.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { WorkmemEvent } from '../../src/events.js';
import type { LLM } from '../../src/llm/llm.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { createSession, type Session } from '../../src/session/index.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import { built } from './benchmarks.js';
import { median, now, p99, type Row } from './harness.js';

export interface BackgroundScale {
  turns: number;
  /** The time one model request takes (the summarizer's: summaryMs). */
  modelMs: number;
  summaryMs: number;
  window: number;
  /** Where the sessions live (default: the system's temporary folder). */
  home?: string;
}

export const BACKGROUND_FULL: BackgroundScale = { turns: 300, modelMs: 200, summaryMs: 2_000, window: 32_000 };
export const BACKGROUND_SMOKE: BackgroundScale = { turns: 40, modelMs: 5, summaryMs: 50, window: 6_000 };

/** Prompt tokens a server was sent, for answers and for summaries. */
export interface Sent {
  answers: number;
  summaries: number;
  summaryRequests: number;
}

/** The servers, in a child process: their base URLs, and what each was sent so far. */
async function models(count: number, scale: BackgroundScale): Promise<{ urls: string[]; sent(): Promise<Sent[]>; close(): void }> {
  const script = built('test/bench/backgroundServerChild.js');
  const options = JSON.stringify({ servers: count, modelMs: scale.modelMs, summaryMs: scale.summaryMs });
  const child = spawn(process.execPath, [script, options], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error('the model servers stopped');
    return line.value as string;
  };
  const urls = JSON.parse(await next()) as string[];
  return {
    urls,
    sent: async () => {
      child.stdin.write('stats\n');
      return JSON.parse(await next()) as Sent[];
    },
    close: () => child.stdin.end(),
  };
}

interface Run {
  name: string;
  settings: SettingsOverrides;
  session: Session;
  /** The model's own time in the turn being played. */
  modelTime: number;
  added: number[];
  /** What workmem added to the turns that compacted. */
  compacting: number[];
  /** A compaction happened in the turn being played. */
  compacted: boolean;
  compactions: Map<string, number>;
  background: { made: number; superseded: number; failed: number };
}

/** The model as the session calls it, its requests timed (the turn's model time is left out of what workmem adds). */
function timed(llm: LLM, run: { modelTime: number }): LLM {
  return {
    model: llm.model,
    contextWindow: llm.contextWindow,
    maxOutputTokens: llm.maxOutputTokens,
    complete: async (request, options) => {
      const start = now();
      try {
        return await llm.complete(request, options);
      } finally {
        run.modelTime += now() - start;
      }
    },
    summarize: llm.summarize!.bind(llm),
  };
}

async function open(name: string, settings: SettingsOverrides, window: number, baseURL: string, home: string): Promise<Run> {
  const llm = openaiChat({ baseURL, apiKey: 'bench', model: 'gpt-4o', contextWindow: window, maxOutputTokens: 1_000, env: {} });
  const run: Omit<Run, 'session'> = {
    name,
    settings,
    modelTime: 0,
    added: [],
    compacting: [],
    compacted: false,
    compactions: new Map(),
    background: { made: 0, superseded: 0, failed: 0 },
  };
  const session = await createSession({
    llm: timed(llm, run),
    home,
    cwd: '/bench',
    env: {},
    trace: false,
    settings: { injectHistory: true, retry: { maxRetries: 0 }, ...settings },
  });
  session.on('*', (e: WorkmemEvent) => {
    if (e.type === 'compaction_end' && e.replaced > 0) {
      run.compactions.set(e.reason, (run.compactions.get(e.reason) ?? 0) + 1);
      run.compacted = true;
    }
    if (e.type === 'background_end') {
      if (e.status === 'ready') run.background.made++;
      else if (e.status === 'superseded') run.background.superseded++;
      else run.background.failed++;
    }
  });
  return Object.assign(run, { session });
}

const fmt = (ms: number): string => ms.toLocaleString('en-US', { maximumFractionDigits: 1 });

const question = (t: number): string =>
  `Turn ${t}: ${'here is more about the trip, the people coming and what they need, '.repeat(6)}what do you make of it?`;

/** The sessions' turns, alternated; then they are closed with their servers and home: what each server was sent. */
async function play(runs: Run[], turns: number, model: { sent(): Promise<Sent[]>; close(): void }, home: string): Promise<Sent[]> {
  try {
    for (let t = 1; t <= turns; t++) {
      // A different order each turn: no session always follows the same one.
      for (let k = 0; k < runs.length; k++) {
        const run = runs[(t + k) % runs.length]!;
        run.modelTime = 0;
        run.compacted = false;
        const start = now();
        const result = await run.session.prompt(question(t));
        const wall = now() - start;
        if (result.status !== 'done') throw new Error(`${run.name}, turn ${t}: ${result.status} ${result.error?.message ?? ''}`);
        run.added.push(wall - run.modelTime);
        if (run.compacted) run.compacting.push(wall - run.modelTime);
      }
    }
    return await model.sent();
  } finally {
    for (const run of runs) await run.session.close();
    model.close();
    rmSync(home, { recursive: true, force: true });
  }
}

export async function backgroundCompaction(scale: BackgroundScale): Promise<Row[]> {
  const home = mkdtempSync(join(scale.home ?? tmpdir(), 'workmem-bench-background-'));
  const model = await models(3, scale);
  const runs = [
    await open('never compacts', { backgroundThreshold: false }, 10_000_000, model.urls[0]!, home),
    await open('before: the fallback summarises when it compacts', { backgroundThreshold: false }, scale.window, model.urls[1]!, home),
    await open('after: summary prepared in the background (default)', {}, scale.window, model.urls[2]!, home),
  ];
  const sent = await play(runs, scale.turns, model, home);
  const [never, before, after] = runs as [Run, Run, Run];
  const rows: Row[] = runs.map((run, i) => {
    const { answers, summaries, summaryRequests } = sent[i]!;
    const compacted = [...run.compactions].map(([reason, n]) => `${reason} ${n}`).join(', ') || 'none';
    const cost = run.compacting.length
      ? `, those turns ${fmt(median(run.compacting))} ms median, ${fmt(Math.max(...run.compacting))} ms at most`
      : '';
    const background =
      run.settings.backgroundThreshold === false
        ? ''
        : `; background summaries: ${run.background.made} ready, ${run.background.superseded} superseded, ${run.background.failed} failed`;
    return {
      metric: 'Time workmem adds to a turn',
      case: `${scale.turns} turns, ${run.name}`,
      median: median(run.added),
      p99: p99(run.added),
      unit: 'ms',
      target: null,
      met: null,
      note: `(compactions: ${compacted}${cost}${background}; prompt tokens: ${answers.toLocaleString('en-US')} for answers, ${summaries.toLocaleString('en-US')} in ${summaryRequests} summary requests)`,
    };
  });
  const ratio = (run: Run): number => p99(run.added) / p99(never.added);
  rows.push(
    {
      metric: 'p99 of the time added, against a session that never compacts',
      case: 'before (the fallback waits for its summary)',
      median: ratio(before),
      p99: null,
      unit: '×',
      target: null,
      met: null,
    },
    {
      metric: 'p99 of the time added, against a session that never compacts',
      case: 'after (prepared in the background)',
      median: ratio(after),
      p99: null,
      unit: '×',
      target: '≤ 1.1',
      met: ratio(after) <= 1.1,
    },
  );
  const [, b, a] = sent as [Sent, Sent, Sent];
  const share = (a.answers + a.summaries) / (b.answers + b.summaries);
  rows.push({
    metric: 'Prompt tokens, after against before',
    case: 'answers and summaries',
    median: share,
    p99: null,
    unit: '×',
    target: '0.95–1.05',
    met: share >= 0.95 && share <= 1.05,
  });
  return rows;
}

/**
 * The default threshold: sessions alike but for backgroundThreshold, alternated, with turns
 * twice as fast (more history arrives while a summary is made). Per threshold: how often the
 * fallback still waited (the summary was not ready in time), the summaries made and those not
 * used (what preparing early costs), and the p99 of the time added.
 */
export async function backgroundThresholds(scale: BackgroundScale, thresholds: readonly number[]): Promise<Row[]> {
  const home = mkdtempSync(join(scale.home ?? tmpdir(), 'workmem-bench-thresholds-'));
  const model = await models(thresholds.length, scale);
  const runs: Run[] = [];
  for (const [i, threshold] of thresholds.entries())
    runs.push(await open(`backgroundThreshold ${threshold}`, { backgroundThreshold: threshold }, scale.window, model.urls[i]!, home));
  const sent = await play(runs, scale.turns, model, home);
  return runs.map((run, i) => {
    const used = run.compactions.get('background') ?? 0;
    const waited = run.compactions.get('fallback') ?? 0;
    const { answers, summaries } = sent[i]!;
    return {
      metric: 'Background threshold',
      case: `${run.name}, ${scale.turns} turns, a model request ${scale.modelMs} ms, a summary ${scale.summaryMs} ms`,
      median: median(run.added),
      p99: p99(run.added),
      unit: 'ms',
      target: null,
      met: null,
      note: `(the fallback waited ${waited} times, swapped a prepared summary in ${used} times; summaries: ${run.background.made} made, ${run.background.superseded} superseded, ${run.background.made - used} not used; prompt tokens: ${answers.toLocaleString('en-US')} for answers, ${summaries.toLocaleString('en-US')} for summaries)`,
    };
  });
}
