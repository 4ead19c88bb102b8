/**
 * What a session machine is given, and the port its actors reach the world through (the
 * turn's host and the session's own actors): the types sessionMachine.ts and src/actors/ agree on.
 */
import type { CompactionResult } from '../src/compaction/compact.js';
import type { CompactionStrategy, CompactionTarget } from '../src/compaction/plan.js';
import type { BackgroundOrder, PreparedSummary } from '../src/compaction/prepared.js';
import type { HistoryMode, HistoryView } from '../src/history/historyView.js';
import type { ChatMessage, MessageShape, ToolCall } from '../src/history/messages.js';
import type { ToolSpec } from '../src/tools/tool.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';
import type { RecentWindow } from '../src/history/recentWindow.js';
import type { TrackerState } from '../src/memory/reminderTracker.js';
import type { TurnHost, TurnOutput, TurnStatics } from './turnTypes.js';

export interface QueuedPrompt {
  id: string;
  text: string;
  /** Pinned: every request carries it and no compaction replaces it. */
  pinned?: boolean;
}

/** The user's compaction between turns (Session.compact, /compact): what to compact, by id. */
export interface CompactionAsked {
  id: string;
  target: CompactionTarget;
  strategy: CompactionStrategy;
  keepRecent: number;
}

/** How the last compaction asked between turns ended: its result, or why it failed or was refused. */
export type CompactionOutcome = { id: string; result: CompactionResult } | { id: string; error: string };

/** The conversation a host's loop holds (its system messages apart), read by index: a host may convert its messages only when asked. */
export interface HostConversation {
  readonly length: number;
  at(index: number): ChatMessage;
  /**
   * Whether the host pinned the message at `index` (a user message only: every request
   * carries it, no compaction replaces it). Read when the message is first recorded.
   */
  pinned?(index: number): boolean;
  /**
   * The message at `index` by its role, the call it answers and the calls it makes, read
   * without converting the message (the conversation is matched by these first; only the
   * messages compared are converted). Without it, `at(index)` is read.
   */
  shape?(index: number): MessageShape;
  /**
   * What stands for the message at `index` from call to call while the host has not changed
   * it, compared with ===: its own message object when its loop keeps them (a LangGraph
   * state's messages), else a value it was made from (its text). With it, the messages a
   * call begins with that the last call held too are not read again.
   */
  identity?(index: number): unknown;
}

/** One model call of a host's own loop: its instructions (its system messages), the conversation its loop holds, the tools it sends. */
export interface HostCall {
  id: string;
  instructions: string | undefined;
  conversation: HostConversation;
  tools: readonly ToolSpec[];
  /** The host always sends its whole conversation (a proxy's client): wherever it departs from the log, it took a branch. */
  whole?: boolean;
  /** The first call of a loop opened in the middle of a turn (a loop opened per request): it resumes that turn. */
  resume?: boolean;
}

/** A host's loop asks workmem to run some of its own tools (the model called them). */
export interface HostTools {
  id: string;
  calls: ToolCall[];
}

/** The host loop's pass in progress: a model call, or a run of workmem's tools. */
export type HostPass = { id: string; kind: 'call' } | ({ kind: 'tools' } & HostTools);

/** How a host loop's pass ended (the facade waits for it). */
export interface HostPassOutcome {
  id: string;
  output: TurnOutput | null;
  error: string | null;
}

/** The turn's host, and what the session's own actors do. */
export interface SessionHost extends TurnHost {
  accept(input: AcceptInput): Promise<AcceptOutput>;
  acceptCall(input: AcceptCallInput): Promise<AcceptCallOutput>;
  save(input: SaveInput): Promise<SaveOutput>;
  persistMode(input: PersistModeInput): Promise<void>;
  /** Summarise the turns of a background order, while the session goes on; throws when it cannot (it is tried again later). */
  summarize(input: BackgroundSummaryInput, signal: AbortSignal): Promise<PreparedSummary>;
}

/** The session's background compaction: the summary in progress, the one ready to swap in, and the failures in a row. */
export interface SessionBackground {
  order: BackgroundOrder | null;
  ready: PreparedSummary | null;
  failures: number;
}

export interface SessionStatics extends TurnStatics {
  host?: SessionHost;
}

interface SessionHostInput {
  host?: SessionHost;
}

export interface SessionInput {
  statics: SessionStatics;
  /** Number of the last turn already in the log (0 for a new session). */
  lastTurn: number;
  history: HistoryView;
  tracker: TrackerState;
  calibration: number;
  mode: HistoryMode;
  pinned: HistoryMode | null;
  health: MemoryHealth;
  modelWrites: number;
  /** Phase 2's held window as the session last saved it (recentWindow.ts). */
  window?: RecentWindow | null;
}

export interface AcceptInput extends SessionHostInput {
  prompt: QueuedPrompt;
  turn: number;
}
export interface AcceptOutput {
  history: HistoryView;
}
export interface AcceptCallInput extends SessionHostInput {
  call: HostCall;
  turn: number;
}
export interface AcceptCallOutput {
  history: HistoryView;
  /** The turn the call's messages end in. */
  turn: number;
  /** The call brought a user message: it opened a turn (the last one it opened). */
  opened: { text: string } | null;
  /** The system prompt and tools this call's requests are built with (the same objects while they do not change). */
  systemPrompt: string;
  tools: readonly ToolSpec[];
  /** The prefix workmem's tools are sent with beside the host's (toolNaming.ts); absent: none. */
  toolPrefix?: string;
}
export interface SaveInput extends SessionHostInput {
  turn: number;
  output: TurnOutput;
  mode: HistoryMode;
  pinned: HistoryMode | null;
  modelWrites: number;
}
export interface SaveOutput {
  /** The log's view after the turn, including anything an aborted actor saved. */
  history: HistoryView;
}
export interface BackgroundSummaryInput extends SessionHostInput {
  order: BackgroundOrder;
}
/** A mode was switched or pinned: kept at once (meta), and a switch is recorded in the log. */
export interface PersistModeInput extends SessionHostInput {
  turn: number;
  from: HistoryMode;
  to: HistoryMode;
  pinned: HistoryMode | null;
}

export type { MessageShape } from '../src/history/messages.js';
