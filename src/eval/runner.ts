/**
 * runEval: plays each conversation of a suite under each arm on the model given, scores
 * the answers (and has a judge grade them, when one is given), measures what happened,
 * keeps each finished conversation in the results file, and sums up. It stops cleanly when
 * its signal aborts or its budget would be passed, with what was finished kept.
 */
import { ConfigError, type SettingsOverrides } from '../settings/config.js';
import type { LLM } from '../llm/llm.js';
import { loadTokenCounter } from '../tokens/tokens.js';
import { ARM_NAMES, runArm, type ArmName, type ArmRun } from './arms.js';
import { Budget, BudgetStop, projectedCost } from './budget.js';
import { judgeAnswer } from './judge.js';
import { addOutput, type OutputByKind } from './meteredModel.js';
import { billOf, costOf, DEFAULT_PRICES, priceOf, type BilledTokens, type Price, type PriceTable } from './prices.js';
import type { ArmResult, ConversationResult, EvalResult, GateResult, QuestionResult } from './results.js';
import { fingerprintOf, openResultsFile, type ResultsFile } from './resultsFile.js';
import { matches } from './scoring.js';
import { builtInSuite, type Conversation, type Suite, type SuiteName } from './suite.js';
import { summarise } from './summary.js';

/** Which conversation and arm a model is asked for (a new one per run keeps provider caches apart). */
export interface EvalRunId {
  conversation: string;
  arm: ArmName;
}

/** Where a run is, for a progress bar. */
export interface EvalProgress {
  /** The conversation being played (its id). */
  conversation: string;
  /** 0-based index of the conversation among those this invocation plays. */
  index: number;
  /** Conversations this invocation plays. */
  conversations: number;
  arm: ArmName;
  /** The turn about to be played (0-based). */
  turn: number;
  /** Turns played so far by this invocation, over every arm, and in all. */
  done: number;
  /** Turns this invocation plays in all (every arm). */
  total: number;
}

/** What runEval takes. */
export interface EvalOptions {
  /** The model: one for every run, or one made per conversation and arm. */
  llm: LLM | ((run: EvalRunId) => LLM | Promise<LLM>);
  /** The model's name in the report and the price table (default: the llm's `model`; name it when `llm` is a function). */
  model?: string;
  /** Default: workmem's full suite. */
  suite?: Suite | SuiteName;
  /** Default: all four. */
  arms?: readonly ArmName[];
  /** Settings of the workmem arms over the defaults, e.g. CHEAP_LAYOUT (the cache-aware arm's own go over them). */
  settings?: SettingsOverrides;
  /** The window every arm is held to (default 16,384 tokens); the full-history peer sends whatever it has. */
  contextWindow?: number;
  /** Only the first n conversations. */
  limit?: number;
  /** A model that grades each answer (judgePrompt.ts). */
  judge?: LLM;
  /** Default DEFAULT_PRICES. */
  prices?: PriceTable;
  /** Dollars this invocation may spend; needs a price for the model. */
  maxCost?: number;
  /** The results file (JSON lines), kept per conversation. */
  resultsFile?: string;
  /** Play only the conversations the results file does not hold yet. */
  resume?: boolean;
  /** Start the results file over even if it holds finished conversations (without it, such a file is refused). */
  overwrite?: boolean;
  /** Gates: the least accuracy (0–1) every workmem arm must reach. */
  minAccuracy?: number;
  /** Gates: the most input tokens every workmem arm may send, as a share of the full-history peer's. */
  maxTokensRatio?: number;
  /** Stops the run; what finished is kept and returned (`stopped`). */
  signal?: AbortSignal;
  /** Before each turn of each arm. */
  onProgress?: (progress: EvalProgress) => void;
  /** Each conversation once every arm has played it. */
  onConversation?: (result: ConversationResult) => void;
}

/** The default window every arm is held to. */
export const EVAL_CONTEXT_WINDOW = 16_384;

/** Runs the eval and sums it up; see EvalOptions. */
export async function runEval(options: EvalOptions): Promise<EvalResult> {
  const suite = typeof options.suite === 'object' ? options.suite : builtInSuite(options.suite ?? 'full');
  const conversations = suite.conversations.slice(0, options.limit ?? suite.conversations.length);
  const arms = [...(options.arms ?? ARM_NAMES)];
  const window = options.contextWindow ?? EVAL_CONTEXT_WINDOW;
  const first = typeof options.llm === 'function' ? null : options.llm;
  const model = options.model ?? first?.model ?? 'model';
  const prices = options.prices ?? DEFAULT_PRICES;
  const price = priceOf(prices, model) ?? null;
  const judgePrice = options.judge ? (priceOf(prices, options.judge.model) ?? null) : null;
  if (options.maxCost !== undefined && (!price || (options.judge && !judgePrice)))
    throw new ConfigError(
      `--max-cost needs a price for ${!price ? model : options.judge!.model}: the built-in table has ${Object.keys(prices).join(', ')}; give --prices FILE`,
    );
  if (options.maxTokensRatio !== undefined && !arms.includes('full-history'))
    throw new ConfigError('--max-tokens-ratio compares with the full-history arm: keep it among the arms');
  if (!arms.length) throw new ConfigError('no arm to run');

  const counter = await loadTokenCounter(model);
  const identity = {
    model,
    suite: suite.name,
    contextWindow: window,
    arms,
    judge: options.judge?.model ?? null,
    ...(options.settings ? { settings: { ...options.settings } } : {}),
  };
  const file: ResultsFile | null = options.resultsFile
    ? openResultsFile(options.resultsFile, identity, fingerprintOf(identity, conversations), {
        resume: options.resume === true,
        overwrite: options.overwrite === true,
        conversations: conversations.map((c) => c.id),
      })
    : null;
  const results: ConversationResult[] = [...(file?.done ?? [])];
  const todo = conversations.filter((c) => !results.some((r) => r.id === c.id));
  const budget = new Budget(options.maxCost ?? null, price);
  const signal = options.signal ?? new AbortController().signal;
  const total = todo.reduce((n, c) => n + c.turns.length * arms.length, 0);
  let done = 0;
  let stopped: EvalResult['stopped'];

  try {
    for (const [index, conversation] of todo.entries()) {
      const measured: ArmResult[] = [];
      for (const arm of arms) {
        if (price) budget.check(projectedCost(conversation, arm, window, counter, price), `${arm} on ${conversation.id}`);
        const llm = typeof options.llm === 'function' ? await options.llm({ conversation: conversation.id, arm }) : options.llm;
        const run = await runArm(arm, conversation, {
          llm,
          counter,
          contextWindow: window,
          signal,
          ...(options.settings ? { settings: options.settings } : {}),
          beforeTurn: (turn, calls) => {
            if (price && budget.max !== null) {
              const spentNow = budget.spent + billOf(price, tokensOf(calls));
              const last = calls.at(-1)?.input ?? 0;
              budget.check(
                budget.turnCost(last, conversation.turns[turn]!.text, counter),
                `turn ${turn + 1} of ${arm} on ${conversation.id}`,
                spentNow,
              );
            }
            options.onProgress?.({ conversation: conversation.id, index, conversations: todo.length, arm, turn, done: done++, total });
          },
        });
        const result = await measure(arm, conversation, run, price, options.judge ?? null, judgePrice, signal);
        budget.spent += (result.cost ?? 0) + (result.judgeCost ?? 0);
        measured.push(result.arm);
      }
      const finished: ConversationResult = {
        id: conversation.id,
        title: conversation.title,
        language: conversation.language,
        turns: conversation.turns.length,
        arms: measured,
      };
      results.push(finished);
      file?.append(finished);
      options.onConversation?.(finished);
    }
  } catch (error) {
    if (error instanceof BudgetStop) stopped = { reason: 'budget', message: error.message };
    else if (signal.aborted)
      stopped = { reason: 'interrupted', message: `interrupted: ${results.length} of ${conversations.length} conversations finished` };
    else throw error;
  }

  const ordered = conversations.flatMap((c) => results.filter((r) => r.id === c.id));
  const summary = summarise(ordered, arms);
  return {
    model,
    suite: suite.name,
    contextWindow: window,
    arms,
    judge: options.judge?.model ?? null,
    conversations: ordered,
    summary,
    gates: stopped ? [] : gates(summary, options),
    ...(stopped ? { stopped } : {}),
    spent: price ? budget.spent : null,
  };
}

function tokensOf(calls: readonly BilledTokens[]): Required<BilledTokens> {
  const sum: Required<BilledTokens> = { input: 0, cached: 0, cacheWrite: 0, output: 0 };
  for (const c of calls) {
    sum.input += c.input;
    sum.cached += c.cached;
    sum.cacheWrite += c.cacheWrite ?? 0;
    sum.output += c.output;
  }
  return sum;
}

/** One arm's run scored and measured. */
async function measure(
  arm: ArmName,
  conversation: Conversation,
  run: ArmRun,
  price: Price | null,
  judge: LLM | null,
  judgePrice: Price | null,
  signal: AbortSignal,
): Promise<{ arm: ArmResult; cost: number | null; judgeCost: number | null }> {
  const questions: QuestionResult[] = [];
  let judgeCost = 0;
  for (const [turn, { text, question }] of conversation.turns.entries()) {
    if (!question) continue;
    const answer = run.answers[turn] ?? '';
    const result: QuestionResult = { turn, category: question.category, correct: matches(question, answer), answer: answer.slice(0, 300) };
    if (judge) {
      const verdict = await judgeAnswer(judge, text, question, answer, signal);
      result.judged = verdict.correct;
      if (judgePrice && verdict.usage) judgeCost += costOf(judgePrice, verdict.usage.promptTokens, 0, verdict.usage.completionTokens);
    }
    questions.push(result);
  }
  const perTurn = (f: (c: ArmRun['calls'][number]) => number): number[] => {
    const out = Array.from({ length: conversation.turns.length }, () => 0);
    for (const c of run.calls) out[c.turn] = (out[c.turn] ?? 0) + f(c);
    return out;
  };
  const tokens = tokensOf(run.calls);
  const { input, cached, cacheWrite, output } = tokens;
  const cost = price ? billOf(price, tokens) : null;
  const outputBy = run.calls.reduce<OutputByKind>((sum, c) => addOutput(sum, c.outputBy), {});
  return {
    arm: {
      arm,
      questions,
      tokensPerTurn: perTurn((c) => c.input),
      cachedPerTurn: perTurn((c) => c.cached),
      input,
      cached,
      cacheWrite,
      output,
      outputBy,
      requests: run.calls.length,
      failedRequests: run.calls.filter((c) => c.failed).length,
      counted: run.calls.some((c) => c.counted),
      cost,
      upkeep: run.upkeep,
      summaries: run.summaries,
      ...(run.peerTools ? { peerTools: run.peerTools } : {}),
      failedTurns: run.failedTurns,
      ...(run.failures.length ? { failures: run.failures } : {}),
      ...(run.keptSession ? { keptSession: run.keptSession } : {}),
      wallMs: Math.round(run.wallMs),
    },
    cost,
    judgeCost: judge ? judgeCost : null,
  };
}

/** The gates asked for, each against every workmem arm that ran. */
function gates(summary: EvalResult['summary'], options: EvalOptions): GateResult[] {
  const out: GateResult[] = [];
  const full = summary.find((s) => s.arm === 'full-history');
  for (const s of summary.filter((a) => a.arm.startsWith('workmem'))) {
    if (options.minAccuracy !== undefined) {
      const value = s.accuracy.asked ? s.accuracy.right / s.accuracy.asked : 0;
      out.push({ gate: 'min-accuracy', arm: s.arm, value, limit: options.minAccuracy, passed: value >= options.minAccuracy });
    }
    if (options.maxTokensRatio !== undefined && full) {
      const value = full.input ? s.input / full.input : Infinity;
      out.push({ gate: 'max-tokens-ratio', arm: s.arm, value, limit: options.maxTokensRatio, passed: value <= options.maxTokensRatio });
    }
  }
  return out;
}
