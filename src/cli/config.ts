/**
 * CLI configuration: flags > environment > <home>/config.json, validated with zod. An
 * error names where the bad value came from, the key and the value — masked (the API
 * keys known here, anything shaped like a key) and cut short, never a secret whole.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import {
  ConfigError,
  MAX_RECENT_TURNS,
  definedOnly,
  fallbackTargetFromEnv,
  issueText,
  memoryPositionFromEnv,
  recentTurnsFromEnv,
  recentTurnsStepFromEnv,
  reminderFromEnv,
  sessionWriteQuotaFromEnv,
  type SettingsOverrides,
} from '../settings/config.js';
import { redactor, type Redact } from '../secrets/redact.js';
import { defaultHome } from '../storage/sessionPaths.js';
import type { SessionStore } from '../storage/sessionStore.js';
import { databaseOf, storeOf, type DatabaseChoice } from './databaseStore.js';
import { DEFAULT_SESSION_WRITE_QUOTA_BYTES, FALLBACK_TARGETS, MEMORY_POSITIONS } from '../settings/settings.js';

const int = z.number().int().positive();
const Shape = {
  model: z.string().min(1),
  // http(s) with a host: anything else (htp:/oops) is a typo that no retry mends.
  baseURL: z.url({ protocol: /^https?$/, hostname: /./ }),
  apiKey: z.string().min(1),
  contextWindow: int.min(256),
  maxOutputTokens: int,
  compactionModel: z.string().min(1),
  timeoutMs: int,
  firstByteTimeoutMs: int,
  firstByteMsPerPromptToken: z.number().min(0).max(10_000),
  maxRetries: z.number().int().min(0).max(20),
  historyMode: z.enum(['auto', 'phase1', 'phase2', 'hybrid']),
  language: z.enum(['en', 'zh']),
  compaction: z.enum(['llm', 'auto']),
  fallbackThreshold: z.number().gt(0.05).lt(1),
  hybridRecent: int,
  recentTurns: z.number().int().min(0).max(MAX_RECENT_TURNS),
  recentTurnsStep: z.number().int().min(1).max(MAX_RECENT_TURNS),
  keepRecentTurns: z.number().int().min(0),
  compactHistoryFloor: z.number().min(0).lt(1),
  sessionWriteQuotaBytes: int.min(1024),
  fallbackTarget: z.enum(FALLBACK_TARGETS),
  memoryPosition: z.enum(MEMORY_POSITIONS),
  instructions: z.string(),
  reminder: z
    .object({ enabled: z.boolean(), maxRounds: int, minRounds: z.number().int().min(0), tokenThreshold: z.number().min(0).max(100) })
    .partial()
    .strict(),
  itemMemory: z
    .object({
      scope: z.enum(['session', 'user']),
      userId: z.string().min(1),
      maxCapacity: int,
      maxTokens: int,
      maxAgeMinutes: z.number().positive(),
      inject: z.object({ limit: int, maxTokens: int }).partial().strict(),
    })
    .partial()
    .strict(),
};
export const CliConfigSchema = z.object(Shape).partial().strict();
export type FileConfig = z.infer<typeof CliConfigSchema>;

export interface CliConfig extends FileConfig {
  home: string;
  model: string;
  /** --database-url / WORKMEM_DATABASE_URL (not config.json): sessions in PostgreSQL. */
  database?: DatabaseChoice;
  /** The store it names (undefined: the home's folders); the command closes it when done. */
  store?: SessionStore;
}

/** Flag names (kebab-case) of the settings a flag can set. */
export const FLAG_KEYS: Record<string, keyof FileConfig> = {
  model: 'model',
  'base-url': 'baseURL',
  'context-window': 'contextWindow',
  'max-output-tokens': 'maxOutputTokens',
  'compaction-model': 'compactionModel',
  mode: 'historyMode',
  language: 'language',
  compaction: 'compaction',
  'recent-turns': 'recentTurns',
  'recent-turns-step': 'recentTurnsStep',
  'fallback-target': 'fallbackTarget',
  'memory-position': 'memoryPosition',
  'session-write-quota': 'sessionWriteQuotaBytes',
};
const NUMERIC = new Set<keyof FileConfig>(['contextWindow', 'maxOutputTokens', 'recentTurns', 'recentTurnsStep', 'sessionWriteQuotaBytes']);

export function loadConfig(flags: Record<string, unknown>, env: NodeJS.ProcessEnv): CliConfig {
  const home = (typeof flags.home === 'string' && flags.home) || defaultHome(env);
  const secrets = [env.OPENAI_API_KEY];
  const mask: Redact = (text) => redactor(secrets)(text);
  const file = readConfigFile(join(home, 'config.json'), secrets, mask);
  const recentTurns = recentTurnsFromEnv(env);
  const recentTurnsStep = recentTurnsStepFromEnv(env);
  const fallbackTarget = fallbackTargetFromEnv(env);
  const memoryPosition = memoryPositionFromEnv(env);
  const sessionWriteQuotaBytes = sessionWriteQuotaFromEnv(env);
  const fromEnv = check(
    {
      ...(sessionWriteQuotaBytes !== undefined ? { sessionWriteQuotaBytes } : {}),
      ...(recentTurns !== undefined ? { recentTurns } : {}),
      ...(recentTurnsStep !== undefined ? { recentTurnsStep } : {}),
      ...(fallbackTarget !== undefined ? { fallbackTarget } : {}),
      ...(memoryPosition !== undefined ? { memoryPosition } : {}),
      ...(env.WORKMEM_MODEL?.trim() ? { model: env.WORKMEM_MODEL.trim() } : {}),
      ...(env.OPENAI_BASE_URL?.trim() ? { baseURL: env.OPENAI_BASE_URL.trim() } : {}),
      ...(env.OPENAI_API_KEY?.trim() ? { apiKey: env.OPENAI_API_KEY.trim() } : {}),
    },
    (key) => ({ model: 'WORKMEM_MODEL', baseURL: 'OPENAI_BASE_URL', apiKey: 'OPENAI_API_KEY' })[key as string] ?? key,
    mask,
  );
  const flagValues: Record<string, unknown> = {};
  for (const [flag, key] of Object.entries(FLAG_KEYS)) {
    const raw = flags[flag];
    if (raw === undefined) continue;
    flagValues[key] = NUMERIC.has(key) ? (/^\d+$/.test(String(raw)) ? Number(raw) : raw) : raw;
  }
  const fromFlags = check(flagValues, (key) => `--${Object.entries(FLAG_KEYS).find(([, k]) => k === key)?.[0] ?? key}`, mask);
  // WM_* go over the file's reminder settings here: the session would otherwise take the file's as the embedder's, over the environment.
  const reminder = { ...file.reminder, ...reminderFromEnv(env) };
  const database = databaseOf(flags as Record<string, string | boolean | undefined>, env);
  return {
    ...(database ? { database, store: storeOf(database)! } : {}),
    ...file,
    ...fromEnv,
    ...fromFlags,
    ...(Object.keys(reminder).length ? { reminder } : {}),
    home,
    model: fromFlags.model ?? fromEnv.model ?? file.model ?? 'gpt-4o-mini',
  };
}

function readConfigFile(path: string, secrets: (string | undefined)[], mask: Redact): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON: ${jsonProblem((error as Error).message, text)}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new ConfigError(
      `${path} must hold one JSON object of settings, e.g. {"model": "gpt-4o-mini"}; it holds ${Array.isArray(json) ? 'an array' : json === null ? 'null' : `a ${typeof json}`}`,
    );
  const apiKey = (json as { apiKey?: unknown }).apiKey;
  if (typeof apiKey === 'string') secrets.push(apiKey);
  return check(json, (key) => `${path}: ${key}`, mask);
}

/**
 * Where a file stops being JSON, in words of ours and never a character of the file: V8's
 * message quotes the text around the error (`Unexpected token 's', ..."apiKey": sk-pro"...`),
 * and before the file parses, its key is not known to be masked.
 */
function jsonProblem(message: string, text: string): string {
  if (/^Unexpected end of JSON input/.test(message)) return 'it ends too early (a missing } or "?)';
  const at = /^(.*?)(?: in JSON)? at position (\d+)/.exec(message);
  // Those messages name only JSON's own characters, e.g. "Expected ',' or '}' after property value".
  if (at && !at[1]!.includes('"'))
    return `${at[1]!.replace(/^Unexpected token .*/, 'unexpected text')} at ${lineAndColumn(text, Number(at[2]))}`;
  // The quoting kind: the quoted text is found in the file to say where, and not repeated.
  const quoted = /"(?:\.\.\.)?(.*?)(?:\.\.\.)?"(?:\.\.\.)? is not valid JSON$/s.exec(message)?.[1];
  const token = /^Unexpected token '(.)'/su.exec(message)?.[1];
  const from = quoted ? text.indexOf(quoted) : -1;
  if (from < 0) return 'unexpected text';
  return `unexpected text at ${lineAndColumn(text, from + Math.max(0, token ? quoted!.indexOf(token) : 0))}`;
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  return `line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
}

/** A value as an error shows it: masked, and at most about 60 characters. */
function shown(key: string, value: unknown, mask: Redact): string {
  if (key === 'apiKey') return '[redacted]';
  const text = mask(JSON.stringify(value) ?? String(value));
  // A base URL too broken to parse may still carry user:password@ (the redactor needs "://").
  return shortened(key === 'baseURL' ? text.replace(/[^\s/@"]+@/g, '***@') : text);
}

function shortened(text: string): string {
  return text.length > 60 ? `${text.slice(0, 48)}… (${text.length} characters)` : text;
}

function check(value: unknown, name: (key: string) => string, mask: Redact): FileConfig {
  const parsed = CliConfigSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys')
    throw new ConfigError(`${name(shortened(mask(issue.keys[0]!)))}: unknown setting (known: ${Object.keys(Shape).join(', ')})`);
  const key = issue.path.join('.');
  const bad = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey], value);
  // What was expected is ours (zod's words, the valid values): said whole, unlike the value.
  return fail(`${name(key)} = ${shown(key, bad, mask)} is invalid: ${mask(issueText(issue))}`);
}

function fail(message: string): never {
  throw new ConfigError(message);
}

/** The session settings a CLI config implies. */
export function settingsOf(config: CliConfig): SettingsOverrides {
  return definedOnly({
    contextWindow: config.contextWindow,
    reserveOutputTokens: config.maxOutputTokens,
    historyMode: config.historyMode,
    language: config.language,
    compaction: config.compaction,
    fallbackThreshold: config.fallbackThreshold,
    hybridRecent: config.hybridRecent,
    recentTurns: config.recentTurns,
    recentTurnsStep: config.recentTurnsStep,
    keepRecentTurns: config.keepRecentTurns,
    compactHistoryFloor: config.compactHistoryFloor,
    fallbackTarget: config.fallbackTarget,
    memoryPosition: config.memoryPosition,
    sessionWriteQuotaBytes: config.sessionWriteQuotaBytes,
    reminder: config.reminder,
  });
}

/**
 * The session write quota that commands of this home apply (env > config.json > default),
 * for `sessions show`, which reads a session without the model's flags.
 */
export function sessionWriteQuotaOf(home: string, env: NodeJS.ProcessEnv): number {
  const fromEnv = sessionWriteQuotaFromEnv(env);
  if (fromEnv !== undefined) return fromEnv;
  const secrets = [env.OPENAI_API_KEY];
  const file = readConfigFile(join(home, 'config.json'), secrets, (text) => redactor(secrets)(text));
  return file.sessionWriteQuotaBytes ?? DEFAULT_SESSION_WRITE_QUOTA_BYTES;
}
