/**
 * workmem/eval: "does it work with my model?" — runEval() plays long conversations through
 * workmem and the usual peers on any model (openaiChat, aiSdkModel(…) or your own LLM) and
 * measures accuracy, tokens, cache, bills and how the model kept its memory; the reports
 * and the suites (workmem's own, or a LongMemEval file) are here too. `workmem eval` is
 * the same from the command line.
 */
export { runEval, EVAL_CONTEXT_WINDOW } from './runner.js';
export type { EvalOptions, EvalProgress, EvalRunId } from './runner.js';
export { ARM_NAMES, ARM_LABELS, CACHE_AWARE, CHEAP_LAYOUT, EVAL_INSTRUCTIONS, SEED_LAYOUT } from './arms.js';
export type { ArmName } from './arms.js';
export { builtInSuite, CATEGORIES } from './suite.js';
export type { Suite, SuiteName, Conversation, EvalTurn, Question } from './suite.js';
export { loadLongMemEval, parseLongMemEval } from './longMemEval.js';
export { matches, normalise, saysNotSaid } from './scoring.js';
export { JUDGE_SYSTEM, judgeMessage } from './judgePrompt.js';
export { DEFAULT_PRICES, loadPrices, priceOf, costOf } from './prices.js';
export type { Price, PriceTable } from './prices.js';
export { markdownReport } from './markdownReport.js';
export { htmlReport } from './htmlReport.js';
export type { EvalResult, ArmSummary, ArmResult, ConversationResult, QuestionResult, GateResult, Score } from './results.js';
export type { Upkeep } from './upkeep.js';
