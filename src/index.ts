/**
 * workmem: working memory for LLM agents. What a service uses: sessions and their
 * registry, tools, the model clients, the events and the errors. The machines and the
 * types to host them are in `workmem/machines`, the PostgreSQL store in `workmem/postgres`,
 * the AI SDK adapter in `workmem/ai-sdk`, the test server in `workmem/testing`.
 */
export { createSession, openSession, listSessions, findSession, readSession, removeSession } from './session/registry.js';
export { Session } from './session/session.js';
export type { SessionOptions, OpenOptions, TurnResult, SessionState, SessionIndexEntry, ItemMemoryConfig } from './session/options.js';
export type { SettingsOverrides } from './settings/config.js';
export type { HistoryMode } from './history/historyView.js';
export type { CompactionResult } from './compaction/apply.js';
export type { WorkmemEvent } from './events.js';
export type { ChatMessage } from './history/messages.js';

export { defineTool } from './tools/tool.js';
export type { Tool, ToolContext, ToolOutput } from './tools/tool.js';

export { openaiChat } from './llm/openaiChat.js';
export type { OpenAIChatOptions } from './llm/openaiChat.js';
export { scriptedModel } from './llm/scriptedModel.js';
export type { LLM, LLMRequest, LLMResponse, LLMUsage, LLMCallOptions, TurnError } from './llm/llm.js';

export type { SessionStore, SessionReader } from './storage/sessionStore.js';
export { ItemMemory } from './itemMemory/itemMemory.js';

export { LLMError } from './llm/llm.js';
export { ConfigError } from './settings/config.js';
export { SessionInUseError } from './storage/sessionLock.js';
export { LeaseLostError, SequenceConflictError, SessionNotFoundError } from './storage/storeErrors.js';
