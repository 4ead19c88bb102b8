/**
 * workmem/machines: the three statecharts, every type needed to provide their actors and
 * to host them (TurnHost, SessionHost, their inputs and outputs, the events), and the pure
 * helpers that build their input. Nothing here does I/O; a host's actors do.
 */
export { turnMachine } from './turnMachine.js';
export { sessionMachine } from './sessionMachine.js';
export { historyModeMachine } from './historyModeMachine.js';
export type { TurnAnswer, TurnAttempt, TurnBackground, TurnCompaction, TurnContext, TurnEvent } from './turnMachine.js';
export type {
  TurnStatics,
  TurnInput,
  TurnOutput,
  TurnHost,
  HostInput,
  MemoryStoreInput,
  CompactorInput,
  CompactorOutput,
  LlmInput,
  LlmOutput,
  ToolRunnerInput,
  ToolRunnerOutput,
  OverviewWrite,
} from './turnTypes.js';
export type { SessionContext, SessionMachineEvent } from './sessionMachine.js';
export type {
  SessionHost,
  SessionStatics,
  SessionInput,
  QueuedPrompt,
  AcceptInput,
  AcceptOutput,
  SaveInput,
  SaveOutput,
  PersistModeInput,
  CompactionAsked,
  CompactionOutcome,
  BackgroundSummaryInput,
  SessionBackground,
} from './sessionTypes.js';
export type { HistoryModeInput, ModeAnnouncement } from './historyModeMachine.js';
export { toTurnError } from './turnErrors.js';

// What the machines' inputs and outputs are made of.
export type { SessionEvent, TokenUsage, CompactionReason, TurnStatus } from '../src/events.js';
export type { HistoryView, HistoryItem, HistoryMode } from '../src/history/historyView.js';
export { fromItems } from '../src/history/historyView.js';
export type { ChatMessage, AssistantMessage, ToolCall } from '../src/history/messages.js';
export type { BuiltPrompt, PromptBase, PromptTokens } from '../src/prompt/promptBuilder.js';
export type { MemorySnapshot } from '../src/memory/memoryRules.js';
export { memoryHealth, type MemoryHealth } from '../src/memory/memoryTemplate.js';
export { INITIAL_TRACKER, type TrackerState, type ReminderDue, type ReminderConfig } from '../src/memory/reminderTracker.js';
export { defaultTurnSettings, type TurnSettings, type RetryPolicy, type MemoryPosition } from '../src/settings/settings.js';
export { loadTokenCounter, type TokenCounter } from '../src/tokens/tokens.js';
export type { ToolSpec } from '../src/tools/tool.js';
export type { LLMUsage, TurnError } from '../src/llm/llm.js';
export type { CompactionRequest, CompactionResult } from '../src/compaction/compact.js';
export type { BackgroundOrder, PreparedSummary } from '../src/compaction/prepared.js';
export type { RecentWindow } from '../src/history/recentWindow.js';
