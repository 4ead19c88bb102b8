/**
 * What a turn is given and gives back, and the port its actors reach the world through:
 * the types the turn machine (turnMachine.ts) and src/actors/ agree on.
 */
import type { CompactionRequest, CompactionResult } from '../src/compaction/compact.js';
import type { PreparedSummary } from '../src/compaction/prepared.js';
import type { SessionEvent, TokenUsage, TurnStatus } from '../src/events.js';
import type { HistoryMode, HistoryView } from '../src/history/historyView.js';
import type { RecentWindow } from '../src/history/recentWindow.js';
import type { TurnError } from '../src/events.js';
import type { LLMUsage } from '../src/llm/llm.js';
import type { AssistantMessage, ToolCall } from '../src/history/messages.js';
import type { BuiltPrompt, PromptBase } from '../src/prompt/promptBuilder.js';
import type { TrackerState } from '../src/memory/reminderTracker.js';
import type { TurnSettings } from '../src/settings/settings.js';
import type { TokenCounter } from '../src/tokens/tokens.js';
import type { ToolSpec } from '../src/tools/tool.js';
import type { MemorySnapshot } from '../src/memory/memoryRules.js';

/** What stays the same for every turn of a session. */
export interface TurnStatics {
  sessionId: string;
  /**
   * The port to the world outside the machine (files, the model, tools): handed to every
   * actor in its input, so that one provided machine serves many sessions, each actor
   * reaching its own session. Optional for embedders who provide their own actors.
   */
  host?: TurnHost;
  systemPrompt: string;
  tools: readonly ToolSpec[];
  /** The prefix workmem's own tools are sent with (toolNaming.ts): texts that name them say so. Absent: none. */
  toolPrefix?: string;
  counter: TokenCounter;
  settings: TurnSettings;
}

export interface TurnInput {
  statics: TurnStatics;
  turn: number;
  history: HistoryView;
  mode: HistoryMode;
  tracker: TrackerState;
  calibration: number;
  base: PromptBase | null;
  /** The last request's tail tokens: the first guess of the prompt builder's fixed point. */
  tailHint?: number;
  /** Phase 2's window when it holds still across turns (recentTurnsStep over 1). */
  window?: RecentWindow | null;
  /**
   * A pass of a host's own loop (the host calls the model and runs its tools: the AI SDK and
   * LangChain middleware, the proxy): the turn stops once the model has answered, and, given
   * `calls`, runs those (workmem's own tools, which the host asked it to run) instead of a request.
   */
  hostLoop?: boolean;
  /** With hostLoop: the tool calls to run in this pass. */
  calls?: ToolCall[];
  /** Requests of this turn made before this pass (a host loop's earlier passes). */
  request?: number;
  /** With hostLoop: the usage the server reported for those requests, which this pass adds to. */
  usage?: TokenUsage | null;
  /** A summary the session prepared in the background: the fallback swaps it in instead of asking for one. */
  prepared?: PreparedSummary | null;
}

/** A tool call's result, as a host that runs the loop sends it back. */
export interface ToolResult {
  callId: string;
  content: string;
  isError: boolean;
}

export interface TurnOutput {
  status: TurnStatus;
  text: string;
  error: TurnError | null;
  requests: number;
  history: HistoryView;
  tracker: TrackerState;
  calibration: number;
  base: PromptBase | null;
  tailHint: number;
  window: RecentWindow | null;
  /** The server's token counts, summed over the turn's requests that reported them. */
  usage?: TokenUsage;
  /** Tool calls of the last answer left to run: a host loop's pass ends with them (the host runs them). */
  toolCalls: number;
  /** A host loop's tools pass: the results, for the host to send back. */
  results: ToolResult[];
  /** The summary prepared in the background was swapped in during this turn. */
  preparedUsed?: true;
}

/** What the turn's actors do, for one session; src/actors/ implements it over storage, the model and the tools. */
export interface TurnHost {
  loadMemory(input: MemoryStoreInput): Promise<MemorySnapshot>;
  request(input: LlmInput, signal: AbortSignal): Promise<LlmOutput>;
  runTools(input: ToolRunnerInput, signal: AbortSignal): Promise<ToolRunnerOutput>;
  compact(input: CompactorInput, signal: AbortSignal): Promise<CompactorOutput>;
  /**
   * Where the turn's own events go when the machines are provided over hosts (hostedMachine.ts):
   * straight to the session's listeners, without a hop through the session machine.
   */
  report?(event: SessionEvent): void;
}

/** Every actor's input carries the host (see TurnStatics.host). */
export interface HostInput {
  host?: TurnHost;
}

export interface CompactorInput extends HostInput {
  /** What to compact: the system's budget or tier before a request, or a target (the user's /compact). */
  order: CompactionRequest;
  /** The request the compaction runs before; 0 between turns. */
  request: number;
}
export interface CompactorOutput {
  history: HistoryView;
  replaced: number;
  /** What was archived where, the summary and the token counts. */
  result: CompactionResult;
}

export interface LlmInput extends HostInput {
  prompt: BuiltPrompt;
  turn: number;
  request: number;
  maxOutputTokens: number;
}
export interface LlmOutput {
  history: HistoryView;
  message: AssistantMessage;
  usage: LLMUsage | null;
  finishReason: string;
}

export interface ToolRunnerInput extends HostInput {
  calls: ToolCall[];
  turn: number;
  request: number;
  history: HistoryView;
  /** A host's loop records the results itself (they come back in its next call): return them, append nothing. */
  hostLoop?: boolean;
}
export interface OverviewWrite {
  at: number;
  path: string;
  bytes: number;
  warning?: string;
  memory: MemorySnapshot;
}
export interface ToolRunnerOutput {
  history: HistoryView;
  /** Set when a tool wrote overview.md successfully. */
  overviewWrite: OverviewWrite | null;
  /** compact_history ran: the next request carries a reminder. */
  compacted: boolean;
  /** Each call's result, in order. */
  results: ToolResult[];
}

export interface MemoryStoreInput extends HostInput {
  tracker: TrackerState;
}
