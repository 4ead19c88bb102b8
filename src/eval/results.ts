/**
 * What a run of the eval produces: per conversation and arm, the scored questions and the
 * figures of what happened (from the metered model and the session's events); per arm, the
 * summary over all conversations; and the run's own facts. These are the shapes of
 * `--json`, of the results file `--resume` reads, and of `runEval()`'s result.
 */
import type { ArmName, TurnFailure } from './arms.js';
import type { OutputByKind } from './meteredModel.js';
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
  /** Each question of the conversation, scored. */
  questions: QuestionResult[];
  /** Input tokens per turn, every request of the turn (summaries too), as the server reported them. */
  tokensPerTurn: number[];
  /** Of those, read from the provider's cache. */
  cachedPerTurn: number[];
  /** Input tokens of all its requests, as the server reported them. */
  input: number;
  /** Of those, read from the provider's prompt cache. */
  cached: number;
  /** Of those, written to the provider's prompt cache (explicit caching; absent in results from before it was counted). */
  cacheWrite?: number;
  /** Output tokens of all its requests. */
  output: number;
  /** Of those, by what they went to: answers, memory writes, other tool calls, summaries. */
  outputBy?: OutputByKind;
  /** Requests made to the model, each retry one of them. */
  requests: number;
  /** Requests that ended in an error. */
  failedRequests: number;
  /** Some requests had no usage from the server: their tokens are our count. */
  counted: boolean;
  /** Dollars, from the price table; null when the model has no price. */
  cost: number | null;
  /** workmem's arms: how the memory was kept; null for a peer. */
  upkeep: Upkeep | null;
  /** A summarising peer's summaries. */
  summaries: number;
  /** A peer's tool calls whose result was an error, and its answers that held a call written as text (absent in results from before they were counted). */
  peerTools?: { errors: number; asText: number };
  /** Turns that ended without an answer. */
  failedTurns: number;
  /** Each of them: its status and error. */
  failures?: TurnFailure[];
  /** Where the session of a workmem arm whose turns failed was kept. */
  keptSession?: string;
  /** The time the arm took, model included. */
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
  /** Questions answered right. */
  right: number;
  /** Questions asked. */
  asked: number;
}

/** One arm over the whole run. */
export interface ArmSummary {
  arm: ArmName;
  /** What the report calls the arm. */
  label: string;
  /** All questions, by normalised match. */
  accuracy: Score;
  /** By question category. */
  byCategory: Record<string, Score>;
  /** The judge's score, when there is a judge (questions it gave no verdict on are left out). */
  judged?: Score;
  /** Input tokens over the run, as the server reported them. */
  input: number;
  /** Of those, read from the provider's prompt cache. */
  cached: number;
  /** Of those, written to the provider's prompt cache (explicit caching). */
  cacheWrite: number;
  /** Output tokens over the run. */
  output: number;
  /** Of those, by what they went to: `answer`, `memory` (writes and edits of working memory), `tool`, `summary`. */
  outputBy: OutputByKind;
  /** Dollars at the price table's prices; null when the model has none. */
  cost: number | null;
  /** The bill as a share of the cheapest peer's that ran (null: no peer ran, or no price). */
  costRatio: number | null;
  /** Dollars per question answered right (null: no price, or none right). */
  costPerRight: number | null;
  /** Requests made to the model, each retry one of them. */
  requests: number;
  /** Requests per turn played. */
  requestsPerTurn: number;
  /** Requests that ended in an error. */
  failedRequests: number;
  /** Some requests had no usage from the server: their tokens are our count. */
  counted: boolean;
  /** Turns played. */
  turns: number;
  /** Turns that ended without an answer, each with its conversation, status and error. */
  failedTurns: (TurnFailure & { conversation: string })[];
  /** Sessions of workmem arms whose turns failed, kept for the user to open. */
  keptSessions: string[];
  /** workmem's arms: memory writes per 10 turns. */
  writesPer10Turns: number | null;
  /** workmem's arms: reminders fired. */
  reminders: number | null;
  /** workmem's arms: reminders followed by a memory write within 2 requests. */
  heeded: number | null;
  /** Compactions by who made them: llm (the model's compact_history), fallback, horizon, overflow, auto; summary for a peer. */
  compactions: Record<string, number>;
  /** workmem's arms: the model's compact_history calls carried out, compacting or not (under compactHistoryFloor). */
  compactCalls: number | null;
  /** Per conversation, the turn phase 2 began (1-based), or null if it never did; empty for a peer. */
  phase2: { conversation: string; turn: number | null }[];
  /** Tool calls whose result was an error. */
  toolErrors: number;
  /** Answers that held tool calls written as text. */
  textToolCalls: number;
  /** The time the arm took over the run. */
  wallMs: number;
  /** What the numbers say, in words: "memory never maintained — …". */
  findings: string[];
}

/** A gate of `--min-accuracy` or `--max-tokens-ratio`, checked against an arm. */
export interface GateResult {
  /** `min-accuracy` or `max-tokens-ratio`. */
  gate: string;
  arm: ArmName;
  /** The arm's figure: its accuracy (0–1), or its input tokens as a share of the full history's. */
  value: number;
  /** What the gate asks. */
  limit: number;
  passed: boolean;
}

/** A whole run of the eval. */
export interface EvalResult {
  /** The model's name. */
  model: string;
  /** The suite's name: full, small, longmemeval or your own. */
  suite: string;
  /** The window every arm was held to. */
  contextWindow: number;
  /** The arms that ran, in order. */
  arms: ArmName[];
  /** The judge's model, when there was one. */
  judge: string | null;
  /** Each finished conversation, in the suite's order. */
  conversations: ConversationResult[];
  /** Each arm over the run. */
  summary: ArmSummary[];
  /** The gates asked for (none when the run stopped early). */
  gates: GateResult[];
  /** Set when the run stopped before its end: interrupted, or its budget would have been passed. */
  stopped?: { reason: 'interrupted' | 'budget'; message: string };
  /** Dollars this invocation spent (resumed conversations aside); null when the model has no price. */
  spent: number | null;
}
