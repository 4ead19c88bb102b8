/**
 * What a run of the eval produces: per conversation and arm, the scored questions and the
 * figures of what happened (from the metered model and the session's events); per arm, the
 * summary over all conversations; and the run's own facts. These are the shapes of
 * `--json`, of the results file `--resume` reads, and of `runEval()`'s result.
 */
import type { ArmName } from './arms.js';
import type { Upkeep } from './upkeep.js';

/** One question's outcome under one arm. */
export interface QuestionResult {
  /** The conversation's turn (0-based). */
  turn: number;
  category: string;
  /** By normalised match. */
  correct: boolean;
  /** The judge's verdict, when there is a judge (null: it gave none). */
  judged?: boolean | null;
  /** The answer, cut to 300 characters. */
  answer: string;
}

/** One arm's play of one conversation, measured. */
export interface ArmResult {
  arm: ArmName;
  questions: QuestionResult[];
  /** Input tokens per turn, every request of the turn (summaries too), as the server reported them. */
  tokensPerTurn: number[];
  /** Of those, read from the provider's cache. */
  cachedPerTurn: number[];
  input: number;
  cached: number;
  output: number;
  requests: number;
  failedRequests: number;
  /** Some requests had no usage from the server: their tokens are our count. */
  counted: boolean;
  /** Dollars, from the price table; null when the model has no price. */
  cost: number | null;
  /** workmem's arms: how the memory was kept; null for a peer. */
  upkeep: Upkeep | null;
  /** A summarising peer's summaries. */
  summaries: number;
  failedTurns: number;
  wallMs: number;
}

/** One conversation under every arm. */
export interface ConversationResult {
  id: string;
  title: string;
  language: 'en' | 'zh';
  turns: number;
  arms: ArmResult[];
}

/** Right answers of asked questions. */
export interface Score {
  right: number;
  asked: number;
}

/** One arm over the whole run. */
export interface ArmSummary {
  arm: ArmName;
  label: string;
  accuracy: Score;
  byCategory: Record<string, Score>;
  /** The judge's score, when there is a judge (questions it gave no verdict on are left out). */
  judged?: Score;
  input: number;
  cached: number;
  output: number;
  cost: number | null;
  requests: number;
  failedRequests: number;
  counted: boolean;
  turns: number;
  /** workmem's arms: memory writes per 10 turns. */
  writesPer10Turns: number | null;
  reminders: number | null;
  heeded: number | null;
  /** Compactions by who made them: llm (the model's compact_history), fallback, horizon, overflow, auto; summary for a peer. */
  compactions: Record<string, number>;
  /** Per conversation, the turn phase 2 began (1-based), or null if it never did; empty for a peer. */
  phase2: { conversation: string; turn: number | null }[];
  toolErrors: number;
  textToolCalls: number;
  wallMs: number;
  /** What the numbers say, in words: "memory never maintained — …". */
  findings: string[];
}

/** A gate of `--min-accuracy` or `--max-tokens-ratio`, checked against an arm. */
export interface GateResult {
  gate: string;
  arm: ArmName;
  value: number;
  limit: number;
  passed: boolean;
}

/** A whole run of the eval. */
export interface EvalResult {
  model: string;
  suite: string;
  contextWindow: number;
  arms: ArmName[];
  judge: string | null;
  conversations: ConversationResult[];
  summary: ArmSummary[];
  gates: GateResult[];
  /** Set when the run stopped before its end: interrupted, or its budget would have been passed. */
  stopped?: { reason: 'interrupted' | 'budget'; message: string };
  /** Dollars this invocation spent (resumed conversations aside); null when the model has no price. */
  spent: number | null;
}
