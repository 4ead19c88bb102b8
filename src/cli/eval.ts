/**
 * workmem eval: runEval() from the command line. The model is any OpenAI-compatible
 * endpoint (--base-url, --model; or OPENAI_BASE_URL, WORKMEM_MODEL, config.json), or
 * `testing:<profile>`, played offline by the built-in test server with a behaviour
 * profile (a server per conversation and arm). A markdown summary goes to stdout (--json:
 * the result as JSON), --html writes the page; a progress bar on a terminal. Finished
 * conversations are kept in a results file (default <home>/eval/<model>-<suite>.jsonl) that
 * --resume reads. Exit codes: 0 done and every gate passed, 1 a gate missed or the budget
 * reached, 2 bad usage, 130 interrupted (what finished is kept).
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CliIO, Flags } from './cliIO.js';
import { loadConfig } from './config.js';
import { progressBar } from './evalProgress.js';
import { makeLLM } from './runtime.js';
import { UsageError } from './usageError.js';
import {
  ARM_NAMES,
  htmlReport,
  loadLongMemEval,
  loadPrices,
  markdownReport,
  priceOf,
  runEval,
  SEED_LAYOUT,
  CHEAP_LAYOUT,
  type ArmName,
  type EvalResult,
  type Suite,
} from '../eval/index.js';
import { cachingFor, testingModels } from '../eval/testingModel.js';
import type { LLM } from '../llm/llm.js';
import type { SettingsOverrides } from '../settings/config.js';
import { testingProfile } from './testingModel.js';
import { sweepTemporaryHomes } from '../storage/temporaryHome.js';

/** The exit code of an interrupted run (128 + SIGINT). */
const INTERRUPTED = 130;
const STOPPING = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function main({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  if (positionals.length) throw new UsageError(`eval takes no arguments, got ${JSON.stringify(positionals[0])}`);
  sweepTemporaryHomes(); // what a killed eval (or chat, run, demo) left in the temporary folder
  // --context-window is the eval's window, not the model's: the configuration does not read it.
  const config = loadConfig({ ...flags, 'context-window': undefined }, io.env);
  if (flags.resume && flags.overwrite) throw new UsageError('--resume goes on from the results file, --overwrite starts it over: give one');
  if (flags.longmemeval !== undefined && flags.suite !== undefined)
    throw new UsageError('--longmemeval is a suite of its own: give it or --suite, not both');
  const suite: Suite | 'full' | 'small' =
    typeof flags.longmemeval === 'string' ? loadLongMemEval(flags.longmemeval) : suiteName(flags.suite);
  const profile = testingProfile(config.model);
  const prices = loadPrices(typeof flags.prices === 'string' ? flags.prices : undefined);
  // One server per conversation and arm, caching as the provider the prices stand for.
  const testing = profile ? testingModels(profile, config.model, cachingFor(priceOf(prices, config.model))) : null;
  const llm = testing ? (): Promise<LLM> => testing.next() : makeLLM(config);
  const judge = typeof flags['judge-model'] === 'string' ? judgeModel(flags['judge-model'], config) : undefined;
  const resultsFile = resolve(
    io.cwd,
    typeof flags.results === 'string'
      ? flags.results
      : join(config.home, 'eval', `${slug(config.model)}-${typeof suite === 'string' ? suite : suite.name}.jsonl`),
  );
  const controller = new AbortController();
  const interrupt = (): void => controller.abort(new Error('interrupted'));
  // Ctrl-C, a kill or a closed terminal: the running conversations stop and their temporary homes go.
  for (const signal of STOPPING) process.once(signal, interrupt);
  const bar = progressBar(io.stderr);
  io.stderr.write(`workmem eval: ${config.model}; results kept in ${resultsFile}${flags.resume ? ' (resumed)' : ''}\n`);
  let result: EvalResult;
  try {
    result = await runEval({
      llm,
      model: config.model,
      suite,
      ...(flags.arms !== undefined ? { arms: arms(flags.arms) } : {}),
      ...number(flags, 'context-window', (v) => ({ contextWindow: v }), { integer: true, min: 1024 }),
      ...(flags.layout !== undefined ? { settings: layout(flags.layout) } : {}),
      ...number(flags, 'limit', (v) => ({ limit: v }), { integer: true, min: 1 }),
      ...(judge ? { judge } : {}),
      prices,
      ...number(flags, 'max-cost', (v) => ({ maxCost: v }), { min: 0 }),
      ...(flags['min-accuracy'] !== undefined ? { minAccuracy: share(flags['min-accuracy']) } : {}),
      ...number(flags, 'max-tokens-ratio', (v) => ({ maxTokensRatio: v }), { min: 0 }),
      resultsFile,
      resume: flags.resume === true,
      overwrite: flags.overwrite === true,
      signal: controller.signal,
      onProgress: (p) => bar.update(p),
    });
  } finally {
    bar.clear();
    for (const signal of STOPPING) process.off(signal, interrupt);
    await testing?.close();
  }
  io.stdout.write(flags.json ? `${JSON.stringify(result, null, 2)}\n` : markdownReport(result));
  if (typeof flags.html === 'string') {
    const page = resolve(io.cwd, flags.html);
    writeFileSync(page, htmlReport(result));
    io.stderr.write(`workmem eval: the report is in ${page}\n`);
  }
  if (result.stopped?.reason === 'interrupted') {
    io.stderr.write(`workmem eval: ${result.stopped.message}; run the same command with --resume to go on\n`);
    return INTERRUPTED;
  }
  if (result.stopped) {
    io.stderr.write(`workmem eval: ${result.stopped.message}; raise --max-cost and add --resume to go on\n`);
    return 1;
  }
  const missed = result.gates.filter((g) => !g.passed);
  if (missed.length) io.stderr.write(`workmem eval: ${missed.length} gate${missed.length > 1 ? 's' : ''} missed\n`);
  return missed.length ? 1 : 0;
}

function judgeModel(name: string, config: ReturnType<typeof loadConfig>): LLM {
  if (name.startsWith('testing:')) throw new UsageError('--judge-model needs a real model: the behaviour profiles do not grade answers');
  return makeLLM({ ...config, model: name });
}

function suiteName(value: Flags[string]): 'full' | 'small' {
  if (value === undefined || value === 'full' || value === 'small') return value ?? 'full';
  throw new UsageError(`--suite ${JSON.stringify(value)}: the suites are full and small (or give --longmemeval FILE)`);
}

/** --layout: the workmem arms' settings over the defaults. */
function layout(value: Flags[string]): SettingsOverrides {
  const layouts: Record<string, SettingsOverrides> = { default: {}, seed: SEED_LAYOUT, cheap: CHEAP_LAYOUT };
  const chosen = layouts[String(value)];
  if (!chosen) throw new UsageError(`--layout ${JSON.stringify(value)}: the layouts are ${Object.keys(layouts).join(', ')}`);
  return chosen;
}

function arms(value: Flags[string]): ArmName[] {
  const names = String(value)
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const unknown = names.find((a) => !(ARM_NAMES as readonly string[]).includes(a));
  if (unknown || !names.length) throw new UsageError(`--arms ${JSON.stringify(value)}: the arms are ${ARM_NAMES.join(', ')}`);
  return names as ArmName[];
}

/** 0.8, 80 % or 80%: a share in [0, 1]. */
function share(value: Flags[string]): number {
  const text = String(value).trim();
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  const n = percent ? Number(percent[1]) / 100 : /^\d*\.?\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 1))
    throw new UsageError(`--min-accuracy ${JSON.stringify(value)}: give a share from 0 to 1 (0.8) or a percentage (80%)`);
  return n;
}

function number<T>(flags: Flags, flag: string, make: (v: number) => T, rule: { integer?: boolean; min: number }): T | object {
  const raw = flags[flag];
  if (raw === undefined) return {};
  const n = /^\d*\.?\d+$/.test(String(raw).trim()) ? Number(raw) : NaN;
  if (!(n >= rule.min) || (rule.integer && !Number.isInteger(n)))
    throw new UsageError(`--${flag} ${JSON.stringify(raw)}: give ${rule.integer ? 'a whole number' : 'a number'} of at least ${rule.min}`);
  return make(n);
}

/** A model name as part of a file name. */
function slug(model: string): string {
  return model.replace(/[^\w.-]+/g, '-').replace(/^-+|-+$/g, '') || 'model';
}
