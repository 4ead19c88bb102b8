/**
 * workmem: working memory for LLM agents, as an XState turn machine.
 * The public API: sessions, tools, the LLM interface, the event vocabulary, and the
 * machines themselves for embedding with `.provide()`.
 */
export { createSession, openSession, listSessions, findSession, readSession, removeSession } from './session/registry.js';
export { Session } from './session/session.js';
export { SessionInUseError } from './storage/sessionLock.js';
export { LeaseLostError, SequenceConflictError, SessionNotFoundError } from './storage/storeErrors.js';
export { SchemaVersionError } from './storage/postgres/schema.js';
export { postgresStore, type PostgresStoreOptions } from './storage/postgres/postgresStore.js';
export type { SessionStore, SessionReader } from './storage/sessionStore.js';
export type { CompactionResult } from './compaction/apply.js';
export type { CompactionTarget } from './compaction/plan.js';
export type { MemoryHealth } from './memory/memoryTemplate.js';
export type { ReminderLevel } from './memory/reminderTracker.js';
export type { SessionOptions, OpenOptions, TurnResult, SessionState, SessionIndexEntry } from './session/options.js';
export { defineTool } from './tools/tool.js';
export type { Tool, ToolContext, ToolOutput, ToolSpec } from './tools/tool.js';
export { LLMError } from './llm/llm.js';
export { toTurnError } from '../machines/turnErrors.js';
export type { LLM, LLMRequest, LLMResponse, LLMUsage, LLMCallOptions, LLMErrorKind, TurnError } from './llm/llm.js';
export { scriptedModel } from './llm/scriptedModel.js';
export { openaiChat, OPENAI_BASE_URL } from './llm/openaiChat.js';
export type { OpenAIChat, OpenAIChatOptions } from './llm/openaiChat.js';
export { modelLimits } from './llm/models.js';
export type { ScriptedModel, ScriptedReply, ScriptStep, ScriptedModelOptions } from './llm/scriptedModel.js';
export type { SessionEvent, SessionEventType, WorkmemEvent, TurnStatus, CompactionReason } from './events.js';
export type { ChatMessage, AssistantMessage, ToolCall } from './history/messages.js';
export { ConfigError, resolveSettings } from './settings/config.js';
export type { SettingsOverrides } from './settings/config.js';
export type { TurnSettings, RetryPolicy, MemoryPosition } from './settings/settings.js';
export type { HistoryMode, HistoryView, HistoryItem } from './history/historyView.js';
export type { ReminderConfig, TrackerState, ReminderDue } from './memory/reminderTracker.js';
export type { PromptTokens, BuiltPrompt } from './prompt/promptBuilder.js';
export type { MemorySnapshot } from './memory/memoryRules.js';
export { overviewTemplate } from './memory/memoryTemplate.js';
export { loadTokenCounter } from './tokens/tokens.js';
export type { TokenCounter } from './tokens/tokens.js';

export { turnMachine } from '../machines/turnMachine.js';
export type {
  TurnInput,
  TurnOutput,
  TurnStatics,
  MemoryStoreInput,
  CompactorInput,
  CompactorOutput,
  LlmInput,
  LlmOutput,
  ToolRunnerInput,
  ToolRunnerOutput,
} from '../machines/turnMachine.js';
export { historyModeMachine } from '../machines/historyModeMachine.js';
export { sessionMachine } from '../machines/sessionMachine.js';

export { ItemMemory, ItemMemoryError } from './itemMemory/itemMemory.js';
export type { ItemMemoryOptions, MemoryItem, Retrieved, ForgetStrategy } from './itemMemory/itemMemory.js';
export { openItemMemory } from './itemMemory/itemMemoryStore.js';
export type { PersistentItemMemory } from './itemMemory/itemMemoryStore.js';
export type { ItemMemoryConfig } from './session/options.js';
