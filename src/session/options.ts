/** What a session is created or opened with, and what it reports back: the public shapes of the session API. */
import type { InspectionEvent } from 'xstate';
import type Keyv from 'keyv';
import type { SessionEvent, TokenUsage, TurnStatus } from '../events.js';
import type { HistoryMode } from '../history/historyView.js';
import type { LLM, TurnError } from '../llm/llm.js';
import type { TrackerState } from '../memory/reminderTracker.js';
import type { SettingsOverrides } from '../settings/config.js';
import type { SessionStore } from '../storage/sessionStore.js';
import type { TelemetryOption } from '../telemetry/telemetryOption.js';
import type { Tool } from '../tools/tool.js';

/** What a session is created with: the model, and optionally the store, tools, instructions, settings and more. */
export interface SessionOptions {
  llm: LLM;
  /** Root of all workmem data; default $WORKMEM_HOME or ~/.workmem. */
  home?: string;
  /** The working directory the session belongs to; default process.cwd(). */
  cwd?: string;
  /** The new session's id (a lowercase UUID); default a random one. */
  id?: string;
  name?: string;
  /** The host's own system instructions, placed before workmem's. */
  instructions?: string;
  /** Host tools, in addition to read / write / edit. */
  tools?: readonly Tool[];
  settings?: SettingsOverrides;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** Receives XState inspection events of the session and its turns. */
  inspect?: (event: InspectionEvent) => void;
  /** Item memory: remember / recall / forget, optionally injected after overview.md. */
  itemMemory?: ItemMemoryConfig;
  /** Write trace.jsonl for the visualizer (default true). */
  trace?: boolean;
  /** Stream the trace live to `workmem viz`: true (127.0.0.1:4900), a port or a ws:// URL. */
  visualizer?: true | number | string;
  /**
   * Where warnings go: a setting adjusted to fit another, an unreachable visualizer (default:
   * dropped), an event listener that threw, a damaged state file (default: a process warning).
   */
  warn?: (message: string) => void;
  /**
   * Values to keep out of everything the session writes or reports, besides the model's
   * own (`llm.secrets`) and $OPENAI_API_KEY: replaced by "[redacted]".
   */
  secrets?: readonly string[];
  /** Draws in [0, 1) for the retry jitter (default Math.random); inject one for reproducible tests. */
  random?: () => number;
  /**
   * Where the session index, tracker state and item memory go: any keyv instance (its
   * adapter must support `keyv.iterator`); default files under `<home>/state/`.
   */
  stateStore?: Keyv;
  /** Where sessions are kept: default the filesystem store under `home`; e.g. postgresStore({ connectionString }). */
  store?: SessionStore;
  /**
   * For a host loop whose host never sees workmem's own tool calls (the proxy, `workmem
   * serve`): their results are recorded as the tools run, since the host never sends them back.
   */
  recordToolResults?: boolean;
  /**
   * User messages pinned when the session is created, before its first turn (the task
   * statement, rules): every request carries them and no compaction replaces them. Opening
   * a session with another list is refused: a session keeps the pins it was created with.
   */
  pinned?: readonly string[];
  /**
   * OpenTelemetry spans and metrics (docs/observability.md). Default: on when the service has
   * registered a global tracer or meter provider through `@opentelemetry/api`, off (nothing
   * loaded) otherwise; `false` turns it off; or give the providers to report to.
   */
  telemetry?: TelemetryOption;
}

/** Item memory for a session: remember / recall / forget, per session or per user, optionally injected after overview.md. */
export interface ItemMemoryConfig {
  /** 'session' (default): items belong to this session; 'user': shared by a user's sessions. */
  scope?: 'session' | 'user';
  userId?: string;
  maxCapacity?: number;
  maxTokens?: number;
  maxAgeMinutes?: number;
  decayFactor?: number;
  /** Inject the items most relevant to the latest user message after overview.md. */
  inject?: { limit?: number; maxTokens?: number };
}

/** What openSession takes: the options of createSession but the folder and the name, which the session keeps. */
export type OpenOptions = Omit<SessionOptions, 'cwd' | 'name' | 'id'>;

/** How a prompt ended: done, failed or aborted, the answer, the requests it took, the server's token counts. */
export interface TurnResult {
  promptId: string;
  turn: number | null;
  status: TurnStatus;
  text: string;
  requests: number;
  error?: TurnError;
  /** The server's token counts for the turn (cached: input read from its prompt cache). */
  usage?: TokenUsage;
}

/** A session's state now: history mode, turn, whether a turn runs, the reminder tracker, the last request's tokens. */
export interface SessionState {
  id: string;
  dir: string;
  mode: HistoryMode;
  pinned: HistoryMode | null;
  turn: number;
  running: boolean;
  queued: number;
  tracker: TrackerState;
  /** Token figures of the last request built, if any. */
  lastPrompt: Extract<SessionEvent, { type: 'prompt_built' }>['tokens'] | null;
  /** The server's token counts since the session was opened (absent: it reported none). */
  usage?: TokenUsage;
  /** The fallback's next summary, prepared in the background, and what background summaries did and cost since the session was opened. */
  background: BackgroundState;
}

/** Background compaction as `/context` shows it (docs/memory.md#background-summaries). */
export interface BackgroundState {
  /**
   * off: nothing is prepared (no summarizer, or backgroundThreshold false); waiting: below the
   * threshold; summarizing; ready: waits for the fallback to swap it in; resting: failed, tried again later.
   */
  status: 'off' | 'waiting' | 'summarizing' | 'ready' | 'resting';
  /** The turns being summarised, or ready. */
  turns?: string;
  /** Summaries made (ready), swapped in, dropped or superseded (another compaction took their turns first), failed. */
  made: number;
  used: number;
  dropped: number;
  failed: number;
  /** What their model calls cost, as the server reported them (absent: it reported none). */
  usage?: TokenUsage;
}

/** A session as listSessions lists it: id, folder, working directory, creation time, name. */
export interface SessionIndexEntry {
  id: string;
  dir: string;
  cwd: string;
  createdAt: number;
  name: string | null;
}

/** Keys of the state store: a session's index entry and its reminder tracker. */
export const INDEX_KEY = (id: string): string => `session:${id}`;
export const TRACKER_KEY = (id: string): string => `tracker:${id}`;
