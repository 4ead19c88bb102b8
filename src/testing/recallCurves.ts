/**
 * How well models recall a fact as their context grows, from a published long-context
 * benchmark: NoLiMa (Modarressi et al., "NoLiMa: Long-Context Evaluation Beyond Literal
 * Matching", ICML 2025, arXiv:2502.05167), whose needles share no words with their questions.
 * Each curve is one model's accuracy (%) at contexts of 1K to 32K tokens and its base score
 * (short contexts: 250 to 1K tokens), as the authors' results table gives them. The
 * `realistic` behaviour profile forgets by one of them (recallModel below).
 */

/** Context lengths of NoLiMa's table, in tokens. */
export const NOLIMA_LENGTHS = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000] as const;

/** One model's NoLiMa scores: its base score and its accuracy at each of NOLIMA_LENGTHS, in %. */
export interface RecallCurve {
  model: string;
  base: number;
  scores: readonly [number, number, number, number, number, number];
}

/** NoLiMa's results table (accuracy in %, by context length). */
export const NOLIMA_CURVES = {
  'gpt-4o': { model: 'GPT-4o', base: 99.3, scores: [98.1, 98.0, 95.7, 89.2, 81.6, 69.7] },
  'llama-3.3-70b': { model: 'Llama 3.3 70B', base: 97.3, scores: [94.2, 87.4, 81.5, 72.1, 59.5, 42.7] },
  'llama-3.1-405b': { model: 'Llama 3.1 405B', base: 94.7, scores: [89.0, 85.0, 74.5, 60.1, 48.4, 38.0] },
  'llama-3.1-70b': { model: 'Llama 3.1 70B', base: 94.5, scores: [91.0, 81.8, 71.2, 62.7, 51.8, 43.2] },
  'gemini-1.5-pro': { model: 'Gemini 1.5 Pro', base: 92.6, scores: [86.4, 82.7, 75.4, 63.9, 55.5, 48.2] },
  'jamba-1.5-mini': { model: 'Jamba 1.5 Mini', base: 92.4, scores: [76.3, 74.1, 70.8, 62.2, 52.7, 43.6] },
  'command-r-plus': { model: 'Command R+', base: 90.9, scores: [77.0, 73.5, 66.3, 39.5, 21.3, 7.4] },
  'mistral-large-2': { model: 'Mistral Large 2', base: 87.9, scores: [86.1, 85.5, 73.3, 51.5, 32.6, 18.7] },
  'claude-3.5-sonnet': { model: 'Claude 3.5 Sonnet', base: 87.6, scores: [85.4, 84.0, 77.6, 61.7, 45.7, 29.8] },
  'gemini-1.5-flash': { model: 'Gemini 1.5 Flash', base: 84.7, scores: [68.6, 61.6, 51.0, 44.4, 35.5, 28.6] },
  'gpt-4o-mini': { model: 'GPT-4o mini', base: 84.9, scores: [67.7, 58.2, 44.1, 32.6, 20.6, 13.7] },
  'llama-3.1-8b': { model: 'Llama 3.1 8B', base: 76.7, scores: [65.7, 54.4, 44.1, 31.9, 22.6, 14.2] },
} as const satisfies Record<string, RecallCurve>;

/** A curve's name in NOLIMA_CURVES. */
export type RecallCurveName = keyof typeof NOLIMA_CURVES;

/** The curve the `realistic` profile follows by default: Llama 3.3 70B, the open model NoLiMa ranks second. */
export const DEFAULT_RECALL_CURVE: RecallCurveName = 'llama-3.3-70b';

/** Recall is never taken below this, however long the context (the curve is extrapolated past 32K). */
const FLOOR = 0.05;

/**
 * The curve as a share of the model's base score at `tokens` of context: 1 up to 500 tokens
 * (the base is measured at 250 to 1K), NoLiMa's points between, straight lines between
 * them on a logarithmic axis of length, and past 32K the last segment's slope, going on.
 */
export function retention(curve: RecallCurve, tokens: number): number {
  const points: [number, number][] = [[500, 1], ...NOLIMA_LENGTHS.map((l, i): [number, number] => [l, curve.scores[i]! / curve.base])];
  if (tokens <= points[0]![0]) return 1;
  let k = points.findIndex(([l]) => l >= tokens);
  if (k < 0) k = points.length - 1;
  const [l0, r0] = points[k - 1]!;
  const [l1, r1] = points[k]!;
  const t = Math.log(tokens / l0) / Math.log(l1 / l0);
  return Math.min(1, Math.max(FLOOR, r0 + (r1 - r0) * t));
}

/**
 * The probability of recalling a fact with `after` tokens between it and the end of a request
 * of `total` tokens: the geometric mean of the curve at the context's length and at the
 * fact's distance, so that both count and a fact at the far end of the context gets the
 * curve's own value. (NoLiMa reports each length averaged over needles at every depth; how
 * the two weigh against each other is our choice, and the same for every arm.)
 */
export function recallProbability(curve: RecallCurve, after: number, total: number): number {
  return Math.sqrt(retention(curve, total) * retention(curve, Math.min(after, total)));
}
