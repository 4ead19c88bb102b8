/**
 * Settings from the WM_* environment variables (docs/design.md §5) and the embedder's options,
 * validated with zod. A bad value is an error that names the variable and the value.
 */
import { z } from 'zod';
import type { HistoryMode } from '../history/historyView.js';
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import type { ReminderConfig } from '../memory/reminderTracker.js';
import {
  backgroundThresholdFor,
  defaultTurnSettings,
  FALLBACK_TARGETS,
  MEMORY_POSITIONS,
  MEMORY_REFRESHES,
  type FallbackTarget,
  type MemoryPosition,
  type MemoryRefresh,
  type ProviderCaching,
  type RetryPolicy,
  type TurnSettings,
} from './settings.js';

/** A bad option or setting: names where it came from, the key and the value (masked). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** What an embedder may set; everything is optional. */
export interface SettingsOverrides {
  contextWindow?: number;
  reserveOutputTokens?: number;
  fallbackThreshold?: number;
  /**
   * Share of the window at which the fallback's summary is prepared in the background (default
   * 0.8 × fallbackThreshold, 60 %); `false`: never, the fallback summarises when it compacts.
   */
  backgroundThreshold?: number | false;
  reminder?: Partial<ReminderConfig>;
  hybridRecent?: number;
  /** Complete turns phase 2 carries before the active one (default 3; 0: the active turn only). */
  recentTurns?: number;
  /** Up to how many turns phase 2's window holds its first turn (default 24; 1: it moves every turn). */
  recentTurnsStep?: number;
  keepRecentTurns?: number;
  /** Share of the window under which compact_history compacts nothing (default 0.2; 0: always compacts). */
  compactHistoryFloor?: number;
  /** How far the fallback compacts (default 'budget'; 'recent-turns': all but keepRecentTurns). */
  fallbackTarget?: FallbackTarget;
  /** Where a request carries the working memory (default 'before-history', the spec's order). */
  memoryPosition?: MemoryPosition;
  /** When the memory in its place follows a write (default 'when-cheap': held, the changes in the tail; 'every-write': at once). */
  memoryRefresh?: MemoryRefresh;
  language?: MemoryLanguage;
  retry?: Partial<RetryPolicy>;
  maxRequestsPerTurn?: number;
  compaction?: 'llm' | 'auto';
  toolOutput?: { maxLines?: number; maxBytes?: number };
  /** Bytes the model may write to working memory in one turn (default 8 MB). */
  writeQuotaBytes?: number;
  /** Bytes the model's files may hold in working memory over the session (default 32 MB). */
  sessionWriteQuotaBytes?: number;
  /** `true` pins phase 1 (docs/design.md §2.6). */
  injectHistory?: boolean;
  historyMode?: 'auto' | HistoryMode;
}

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
/** More turns than this is phase 1 in all but name. */
export const MAX_RECENT_TURNS = 1000;

const OverridesSchema = z
  .object({
    contextWindow: int(256).optional(),
    reserveOutputTokens: int(1).optional(),
    fallbackThreshold: z.number().gt(0.05).lt(1).optional(),
    backgroundThreshold: z.union([z.number().gt(0.01).lt(1), z.literal(false)]).optional(),
    reminder: z
      .object({
        enabled: z.boolean().optional(),
        maxRounds: int(1).optional(),
        minRounds: int(0).optional(),
        tokenThreshold: z.number().min(0).max(100).optional(),
      })
      .strict()
      .optional(),
    hybridRecent: int(1).optional(),
    recentTurns: int(0, MAX_RECENT_TURNS).optional(),
    recentTurnsStep: int(1, MAX_RECENT_TURNS).optional(),
    keepRecentTurns: int(0).optional(),
    compactHistoryFloor: z.number().min(0).lt(1).optional(),
    fallbackTarget: z.enum(FALLBACK_TARGETS).optional(),
    memoryPosition: z.enum(MEMORY_POSITIONS).optional(),
    memoryRefresh: z.enum(MEMORY_REFRESHES).optional(),
    language: z.enum(['en', 'zh']).optional(),
    retry: z
      .object({ maxRetries: int(0, 20).optional(), baseDelayMs: int(0).optional(), maxDelayMs: int(0).optional() })
      .strict()
      .optional(),
    maxRequestsPerTurn: int(1).optional(),
    compaction: z.enum(['llm', 'auto']).optional(),
    toolOutput: z
      .object({ maxLines: int(10).optional(), maxBytes: int(1024).optional() })
      .strict()
      .optional(),
    writeQuotaBytes: int(1024).optional(),
    sessionWriteQuotaBytes: int(1024).optional(),
    injectHistory: z.boolean().optional(),
    historyMode: z.enum(['auto', 'phase1', 'phase2', 'hybrid']).optional(),
  })
  .strict();

/** WM_* variables → overrides. Unset or empty variables are ignored. */
export function reminderFromEnv(env: NodeJS.ProcessEnv): Partial<ReminderConfig> {
  const out: Partial<ReminderConfig> = {};
  const integer = (name: string, min: number, max: number): number | undefined => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new ConfigError(`${name}=${JSON.stringify(env[name])} is invalid: expected a whole number from ${min} to ${max}`);
    }
    return value;
  };
  const maxRounds = integer('WM_MAX_ROUNDS', 1, 1000);
  const minRounds = integer('WM_MIN_ROUNDS', 0, 1000);
  const tokenThreshold = integer('WM_TOKEN_THRESHOLD', 0, 100);
  if (maxRounds !== undefined) out.maxRounds = maxRounds;
  if (minRounds !== undefined) out.minRounds = minRounds;
  if (tokenThreshold !== undefined) out.tokenThreshold = tokenThreshold;
  const enabled = env.WM_ENABLE_REMINDER?.trim().toLowerCase();
  if (enabled) {
    if (['true', '1', 'yes', 'on'].includes(enabled)) out.enabled = true;
    else if (['false', '0', 'no', 'off'].includes(enabled)) out.enabled = false;
    else throw new ConfigError(`WM_ENABLE_REMINDER=${JSON.stringify(env.WM_ENABLE_REMINDER)} is invalid: expected true or false`);
  }
  return out;
}

/** A whole number from WM_<name> within [min, max]; unset or empty: undefined. */
function wholeFromEnv(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${name}=${JSON.stringify(env[name])} is invalid: expected a whole number from ${min} to ${max}`);
  }
  return value;
}

/** A share of the window (0 to below 1, written 0.2 or .2) from WM_<name> that `valid` accepts; unset or empty: undefined. */
function shareFromEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  expected: string,
  valid: (share: number) => boolean = () => true,
): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const value = Number(raw);
  if (!/^(0|0?\.\d+)$/.test(raw) || !valid(value))
    throw new ConfigError(`${name}=${JSON.stringify(env[name])} is invalid: expected ${expected}`);
  return value;
}

/** The valid values, every one of them, as every configuration error says them. */
function expectedOneOf(values: readonly unknown[]): string {
  return `expected one of ${values.map(String).join(', ')}`;
}

/** What a validation issue says was expected: for a choice, the whole list of valid values. */
export function issueText(issue: z.core.$ZodIssue): string {
  return issue.code === 'invalid_value' ? expectedOneOf(issue.values) : issue.message;
}

/** One of `values` from WM_<name>; unset or empty: undefined. */
function choiceFromEnv<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[]): T | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name}=${JSON.stringify(env[name])} is invalid: ${expectedOneOf(values)}`);
  }
  return raw as T;
}

/** WM_RECENT_TURNS → phase 2's recent turns (docs/design.md §2.6). */
export function recentTurnsFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  return wholeFromEnv(env, 'WM_RECENT_TURNS', 0, MAX_RECENT_TURNS);
}

/** WM_RECENT_TURNS_STEP → up to how many turns phase 2's window holds its first turn. */
export function recentTurnsStepFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  return wholeFromEnv(env, 'WM_RECENT_TURNS_STEP', 1, MAX_RECENT_TURNS);
}

/** WM_SESSION_WRITE_QUOTA → bytes the model's files may hold in working memory over a session. */
export function sessionWriteQuotaFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  return wholeFromEnv(env, 'WM_SESSION_WRITE_QUOTA', 1024, Number.MAX_SAFE_INTEGER);
}

/** WM_FALLBACK_TARGET → how far the fallback compacts (docs/design.md §2.5). */
export function fallbackTargetFromEnv(env: NodeJS.ProcessEnv): FallbackTarget | undefined {
  return choiceFromEnv(env, 'WM_FALLBACK_TARGET', FALLBACK_TARGETS);
}

/** WM_BACKGROUND_THRESHOLD → the share of the window at which the fallback's summary is prepared in the background; `off`: never. */
export function backgroundThresholdFromEnv(env: NodeJS.ProcessEnv): number | false | undefined {
  if (['off', 'false', 'no', '0'].includes(env.WM_BACKGROUND_THRESHOLD?.trim().toLowerCase() ?? '')) return false;
  return shareFromEnv(env, 'WM_BACKGROUND_THRESHOLD', 'a share of the window between 0.01 and 1 (0.6), or off', (share) => share > 0.01);
}

/** WM_COMPACT_HISTORY_FLOOR → the share of the window below which compact_history compacts nothing (0: always compacts). */
export function compactHistoryFloorFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  return shareFromEnv(env, 'WM_COMPACT_HISTORY_FLOOR', 'a share of the window from 0 to below 1 (0.2), or 0 to always compact');
}

/** WM_MEMORY_POSITION → where a request carries the memory (docs/design.md §4). */
export function memoryPositionFromEnv(env: NodeJS.ProcessEnv): MemoryPosition | undefined {
  return choiceFromEnv(env, 'WM_MEMORY_POSITION', MEMORY_POSITIONS);
}

/** WM_MEMORY_REFRESH → when the memory in its place follows a write (docs/design.md §4.1). */
export function memoryRefreshFromEnv(env: NodeJS.ProcessEnv): MemoryRefresh | undefined {
  return choiceFromEnv(env, 'WM_MEMORY_REFRESH', MEMORY_REFRESHES);
}

export interface ResolvedSettings {
  turn: TurnSettings;
  /** The mode the session is pinned to, or null for automatic switching. */
  pinned: HistoryMode | null;
  /** What was adjusted rather than refused (a default lowered to fit a value given), to show the user. */
  warnings: string[];
}

/**
 * Defaults < env < overrides. The model supplies the window and the output reserve
 * unless overridden.
 */
export function resolveSettings(
  model: { contextWindow: number; maxOutputTokens: number; retry?: Partial<RetryPolicy>; caching?: ProviderCaching },
  overrides: SettingsOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedSettings {
  const parsed = OverridesSchema.safeParse(overrides);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.path.join('.') || '(settings)';
    const value = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey], overrides);
    throw new ConfigError(`setting ${key}=${JSON.stringify(value)} is invalid: ${issueText(issue)}`);
  }
  const o = parsed.data;
  const base = defaultTurnSettings(o.contextWindow ?? model.contextWindow, o.reserveOutputTokens ?? model.maxOutputTokens);
  const turn: TurnSettings = {
    ...base,
    ...definedOnly({
      fallbackThreshold: o.fallbackThreshold,
      hybridRecent: o.hybridRecent,
      recentTurns: o.recentTurns ?? recentTurnsFromEnv(env),
      recentTurnsStep: o.recentTurnsStep ?? recentTurnsStepFromEnv(env),
      keepRecentTurns: o.keepRecentTurns,
      compactHistoryFloor: o.compactHistoryFloor ?? compactHistoryFloorFromEnv(env),
      fallbackTarget: o.fallbackTarget ?? fallbackTargetFromEnv(env),
      memoryPosition: o.memoryPosition ?? memoryPositionFromEnv(env),
      memoryRefresh: o.memoryRefresh ?? memoryRefreshFromEnv(env),
      caching: model.caching,
      language: o.language,
      maxRequestsPerTurn: o.maxRequestsPerTurn,
      compaction: o.compaction,
      writeQuotaBytes: o.writeQuotaBytes,
      sessionWriteQuotaBytes: o.sessionWriteQuotaBytes ?? sessionWriteQuotaFromEnv(env),
    }),
    toolOutput: { ...base.toolOutput, ...definedOnly(o.toolOutput ?? {}) },
    reminder: { ...base.reminder, ...reminderFromEnv(env), ...definedOnly(o.reminder ?? {}) },
    retry: { ...base.retry, ...definedOnly(model.retry ?? {}), ...definedOnly(o.retry ?? {}) },
  };
  const warnings: string[] = [];
  if (turn.reminder.minRounds > turn.reminder.maxRounds) {
    const given = o.reminder?.minRounds !== undefined || env.WM_MIN_ROUNDS?.trim();
    if (given)
      throw new ConfigError(`reminder minRounds (${turn.reminder.minRounds}) is larger than maxRounds (${turn.reminder.maxRounds})`);
    // Only the maximum was given: the default minimum yields to it rather than refusing it.
    warnings.push(
      `reminder maxRounds is ${turn.reminder.maxRounds}, below the default minRounds of ${turn.reminder.minRounds}: minRounds is lowered to ${turn.reminder.maxRounds}`,
    );
    turn.reminder = { ...turn.reminder, minRounds: turn.reminder.maxRounds };
  }
  if (turn.compactHistoryFloor >= turn.fallbackThreshold) {
    if (o.compactHistoryFloor !== undefined || env.WM_COMPACT_HISTORY_FLOOR?.trim())
      throw new ConfigError(
        `compactHistoryFloor (${turn.compactHistoryFloor}) must be below fallbackThreshold (${turn.fallbackThreshold}): the fallback keeps every request under it, so compact_history would never compact`,
      );
    // Only the threshold was given: the default floor yields to it rather than refusing every call.
    turn.compactHistoryFloor = 0;
  }
  const background = o.backgroundThreshold ?? backgroundThresholdFromEnv(env);
  if (background === false) turn.backgroundThreshold = null;
  else if (background === undefined) turn.backgroundThreshold = backgroundThresholdFor(turn.fallbackThreshold);
  else if (background >= turn.fallbackThreshold)
    throw new ConfigError(
      `backgroundThreshold (${background}) must be below fallbackThreshold (${turn.fallbackThreshold}): the summary is prepared before the fallback needs it`,
    );
  else turn.backgroundThreshold = background;
  if (turn.reserveOutputTokens >= turn.contextWindow) {
    throw new ConfigError(
      `reserveOutputTokens (${turn.reserveOutputTokens}) must be smaller than the context window (${turn.contextWindow})`,
    );
  }
  const pinned = o.injectHistory ? 'phase1' : o.historyMode && o.historyMode !== 'auto' ? o.historyMode : null;
  return { turn, pinned, warnings };
}

/** The same object without its undefined properties (so that it can be spread over defaults). */
export function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}
