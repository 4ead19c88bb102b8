/**
 * The resolved numbers a turn runs with. Built by config.ts from flags, env, the config
 * file and the model; the machines only read them.
 */
import type { HistoryMode } from '../events.js';
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import { DEFAULT_OUTPUT_LIMITS, type OutputLimits } from '../tools/toolOutputCap.js';
import { DEFAULT_REMINDER_CONFIG, type ReminderConfig } from '../memory/reminderTracker.js';

export interface RetryPolicy {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Where a request carries the working memory: in the system message, before the history
 * (the spec's order, docs/design.md §4), or after the history, before the last message, so
 * that a memory write leaves the history's cached prefix intact. 'by-phase' chooses per
 * request: after the long history of phase 1, before the few messages of phase 2 and hybrid,
 * where a memory kept in front is the part that stays cached.
 */
export type MemoryPosition = 'before-history' | 'after-history' | 'by-phase';
export const MEMORY_POSITIONS = ['before-history', 'after-history', 'by-phase'] as const satisfies readonly MemoryPosition[];

/**
 * When the memory block in its place before the history follows a write (docs/design.md §4.1):
 * 'every-write' at once, so a write re-sends what follows it uncached (the seed's layout);
 * 'when-cheap' (default) it stays as it was at the last cache boundary, the tail carrying
 * what changed since, and is brought up to date when what follows it is sent again anyway
 * (phase 2's window starts again, hybrid's moves) or when carrying the changes would cost more
 * than sending the history again. With phase 2's window held (recentTurnsStep 10) it halves
 * the seed layout's bill at equal or better answers on every eval profile (docs/eval.md).
 */
export type MemoryRefresh = 'every-write' | 'when-cheap';

export const MEMORY_REFRESHES = ['every-write', 'when-cheap'] as const satisfies readonly MemoryRefresh[];

/**
 * How a provider caches prompts: 'automatic' (OpenAI's: any prefix it has seen, from 1,024
 * tokens; writing costs nothing more) or 'explicit' (Anthropic's, Bedrock's: only at the
 * request's cache breakpoints, and what it writes is billed at 1.25 × input). With 'explicit'
 * the memory in its place is brought up to date less eagerly when phase 2's window starts
 * again (docs/design.md §4.1): a refresh writes the prefix again.
 */
export type ProviderCaching = 'automatic' | 'explicit';

export type FallbackTarget = 'budget' | 'recent-turns';
export const FALLBACK_TARGETS = ['budget', 'recent-turns'] as const satisfies readonly FallbackTarget[];

/** Where one request puts the memory. */
export type MemoryPlacement = Exclude<MemoryPosition, 'by-phase'>;

export function memoryPlacement(position: MemoryPosition | undefined, mode: HistoryMode): MemoryPlacement {
  if (position === 'by-phase') return mode === 'phase1' ? 'after-history' : 'before-history';
  return position ?? 'before-history';
}

export interface TurnSettings {
  contextWindow: number;
  /** Output tokens reserved: prompt + this never exceeds the window. */
  reserveOutputTokens: number;
  /** Share of the window at which the system compacts before a request. */
  fallbackThreshold: number;
  /**
   * Share of the window at which the session starts preparing the fallback's summary in the
   * background (below fallbackThreshold), so that the fallback finds it ready and waits for
   * no model; null: never (the fallback summarises when it compacts).
   */
  backgroundThreshold: number | null;
  reminder: ReminderConfig;
  /** Messages carried in hybrid mode. */
  hybridRecent: number;
  /** Complete turns carried before the active one in phase 2 (default 1; the seed's layout 3); 0 carries the active turn only. */
  recentTurns: number;
  /**
   * Default 10 (the seed's layout: 1, the window moves every turn). With k over 1 it holds its
   * first turn, carrying recentTurns to recentTurns + k - 1 earlier turns, so that requests in
   * between send the same messages after the memory, which a provider's cache then serves; it
   * starts again when holding on stops paying, when it would carry more, or when the memory
   * in its place is brought up to date (recentWindow.ts).
   */
  recentTurnsStep: number;
  /** Whole turns the fallback compaction always keeps. */
  keepRecentTurns: number;
  /**
   * Share of the window under which compact_history compacts nothing and says why (default
   * 0.2, the compression guide's "below 20 %: no compaction needed"; 0: it always compacts, as
   * the seed's did). Under it a compaction frees room no request needs, and the request after
   * it is sent, and cached, again from where the history was cut.
   */
  compactHistoryFloor: number;
  /**
   * How far the fallback compacts: 'budget' (default) archives the fewest oldest turns that
   * bring the request to 2/3 of the threshold; 'recent-turns' archives all but the last
   * keepRecentTurns (fewer kept if those alone are over that budget), so less is re-sent
   * uncached after it and the next one comes later.
   */
  fallbackTarget: FallbackTarget;
  /** Where the working memory goes in a request (default 'before-history'). */
  memoryPosition: MemoryPosition;
  /** When the memory in its place follows a write (default 'when-cheap'; MemoryRefresh). */
  memoryRefresh: MemoryRefresh;
  /** How the model's provider caches prompts: its LLM's `caching` (default 'automatic'; ProviderCaching). */
  caching: ProviderCaching;
  language: MemoryLanguage;
  retry: RetryPolicy;
  /** Tool calls per turn before the turn stops (a runaway loop guard). */
  maxRequestsPerTurn: number;
  /**
   * "llm" (default): the model compacts with compact_history; the system only runs the
   * fallback. "auto": the system also compacts at the compression guide's tiers, for
   * models that do not manage their memory (docs/design.md §2.5).
   */
  compaction: 'llm' | 'auto';
  /** Tool output above these limits is capped when captured; the full text goes to detail/. */
  toolOutput: OutputLimits;
  /** Bytes the model's write and edit calls may write in one turn; more are refused with a tool error. */
  writeQuotaBytes: number;
  /**
   * Bytes the model's write and edit calls may keep in working-memory over the whole
   * session (each file at the size its last write left); a write past it is refused with a
   * tool error (src/memory/heldWrites.ts).
   */
  sessionWriteQuotaBytes: number;
}

/** The default session write quota: room for thousands of pages of notes, never a disk filled by one session. */
export const DEFAULT_SESSION_WRITE_QUOTA_BYTES = 32 * 1024 * 1024;

/**
 * The background summary starts at this share of the fallback's threshold (60 % of the window
 * at 75 %): the history may grow by a fifth of the threshold while the summary is made (the
 * bench's figures in docs/performance.md#background-compaction).
 */
export const BACKGROUND_SHARE = 0.8;

/** The default background threshold for a fallback threshold. */
export function backgroundThresholdFor(fallbackThreshold: number): number {
  return Math.round(fallbackThreshold * BACKGROUND_SHARE * 10_000) / 10_000;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30_000 };

export function defaultTurnSettings(contextWindow: number, reserveOutputTokens: number): TurnSettings {
  return {
    contextWindow,
    reserveOutputTokens,
    fallbackThreshold: 0.75,
    backgroundThreshold: backgroundThresholdFor(0.75),
    reminder: DEFAULT_REMINDER_CONFIG,
    hybridRecent: 10,
    recentTurns: 1,
    recentTurnsStep: 10,
    keepRecentTurns: 3,
    compactHistoryFloor: 0.2,
    fallbackTarget: 'budget',
    memoryPosition: 'before-history',
    memoryRefresh: 'when-cheap',
    caching: 'automatic',
    language: 'en',
    retry: DEFAULT_RETRY,
    maxRequestsPerTurn: 50,
    compaction: 'llm',
    toolOutput: DEFAULT_OUTPUT_LIMITS,
    writeQuotaBytes: 8 * 1024 * 1024,
    sessionWriteQuotaBytes: DEFAULT_SESSION_WRITE_QUOTA_BYTES,
  };
}

/**
 * Delay before retry `attempt` (1-based): the server's retry-after when given, else
 * exponential with equal jitter: half of it fixed, half scaled by `jitter`, a draw in
 * [0, 1) the llm actor made for this failure (the machine itself draws nothing).
 */
export function retryDelay(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined, jitter: number): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0) return Math.min(retryAfterMs, policy.maxDelayMs);
  const exponential = policy.baseDelayMs * 2 ** (attempt - 1);
  const share = 0.5 + 0.5 * Math.min(1, Math.max(0, jitter));
  return Math.min(policy.maxDelayMs, Math.round(exponential * share));
}
