/**
 * The one vocabulary of everything observable in a session. The machines, the actors,
 * the CLI, RPC, the trace, the visualizer and the tests all speak it.
 */
import type { HistoryMode } from './history/historyView.js';
import type { TurnError } from './llm/llm.js';
import type { ChatMessage } from './history/messages.js';
import type { MemoryHealth } from './memory/memoryTemplate.js';
import type { PromptTokens } from './prompt/promptBuilder.js';
import type { ReminderLevel, ReminderReason } from './memory/reminderTracker.js';

export type TurnStatus = 'done' | 'failed' | 'aborted';
export type CompactionReason = 'llm' | 'fallback' | 'overflow' | 'auto' | 'manual' | 'horizon';

export type SessionEvent =
  | { type: 'turn_start'; turn: number; promptId: string; text: string }
  | { type: 'memory_loaded'; turn: number; request: number; version: number; bytes: number; detailFiles: number }
  | { type: 'reminder'; turn: number; request: number; level: ReminderLevel; reason: ReminderReason; rounds: number; tokensPercent: number }
  | {
      type: 'prompt_built';
      turn: number;
      request: number;
      mode: HistoryMode;
      messages: number;
      range: [number, number];
      tokens: PromptTokens;
    }
  | { type: 'message_delta'; turn: number; request: number; delta: string }
  | { type: 'message_end'; turn: number; request: number; seq: number; tokens: number; message: ChatMessage; stop?: 'aborted' }
  | { type: 'tool_start'; turn: number; request: number; callId: string; name: string; arguments: string }
  | { type: 'tool_end'; turn: number; request: number; callId: string; name: string; isError: boolean; content: string; ms: number }
  | { type: 'memory_updated'; turn: number; request: number; path: string; bytes: number; health: MemoryHealth; warning?: string }
  | { type: 'mode_changed'; from: HistoryMode; to: HistoryMode; pinned: boolean }
  | { type: 'compaction_start'; turn: number; request: number; reason: CompactionReason; tokensBefore: number }
  | {
      type: 'compaction_end';
      turn: number;
      request: number;
      reason: CompactionReason;
      tokensBefore: number;
      tokensAfter: number;
      replaced: number;
      files: string[];
    }
  | { type: 'retry'; turn: number; request: number; attempt: number; delayMs: number; error: TurnError }
  | { type: 'turn_end'; turn: number; promptId: string; status: TurnStatus; text: string; requests: number; error?: TurnError }
  | { type: 'prompt_dropped'; promptId: string; text: string }
  | { type: 'error'; turn?: number; request?: number; error: TurnError; fatal: boolean };

export type SessionEventType = SessionEvent['type'];

/** An event as delivered to listeners: stamped with its session and time. */
export type WorkmemEvent = SessionEvent & { sessionId: string; ts: number };
