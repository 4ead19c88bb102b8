/**
 * workmem: working memory for LLM agents, as an XState turn machine.
 * The public API: sessions, tools, the LLM interface, the event vocabulary, and the
 * machines themselves for embedding with `.provide()`.
 */
export { createSession, openSession, listSessions, findSession, removeSession, Session } from './session.js';
export { SessionInUseError } from './sessionLock.js';
export type { CompactionResult, CompactionTarget } from './compaction.js';
export type { MemoryHealth } from './memoryTemplate.js';
export type { ReminderLevel } from './reminderTracker.js';
export type { SessionOptions, OpenOptions, TurnResult, SessionState, SessionIndexEntry } from './session.js';
export { defineTool, ToolError } from './tool.js';
export type { Tool, ToolContext, ToolOutput, ToolSpec } from './tool.js';
export { LLMError, toTurnError } from './llm.js';
export type { LLM, LLMRequest, LLMResponse, LLMUsage, LLMCallOptions, LLMErrorKind, TurnError } from './llm.js';
export { scriptedModel } from './scriptedModel.js';
export { openaiChat, OPENAI_BASE_URL } from './openaiChat.js';
export type { OpenAIChat, OpenAIChatOptions } from './openaiChat.js';
export { modelLimits } from './models.js';
export type { ScriptedModel, ScriptedReply, ScriptStep, ScriptedModelOptions } from './scriptedModel.js';
export type { SessionEvent, SessionEventType, WorkmemEvent, TurnStatus, CompactionReason } from './events.js';
export type { ChatMessage, AssistantMessage, ToolCall } from './messages.js';
export { ConfigError, resolveSettings } from './config.js';
export type { SettingsOverrides } from './config.js';
export type { TurnSettings, RetryPolicy } from './settings.js';
export type { HistoryMode, HistoryView, HistoryItem } from './historyView.js';
export type { ReminderConfig, TrackerState, ReminderDue } from './reminderTracker.js';
export type { PromptTokens, BuiltPrompt } from './promptBuilder.js';
export type { MemorySnapshot } from './workingMemory.js';
export { overviewTemplate } from './memoryTemplate.js';
export { loadTokenCounter } from './tokens.js';
export type { TokenCounter } from './tokens.js';

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

export { ItemMemory, ItemMemoryError } from './itemMemory.js';
export type { ItemMemoryOptions, MemoryItem, Retrieved, ForgetStrategy } from './itemMemory.js';
export { openItemMemory } from './itemMemoryStore.js';
export type { PersistentItemMemory } from './itemMemoryStore.js';
export type { ItemMemoryConfig } from './session.js';
