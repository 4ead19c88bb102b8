/**
 * The one vocabulary of everything observable in a session. The machines, the actors,
 * the CLI, RPC, the trace, the visualizer and the tests all speak it.
 */
/*
 * A leaf: it imports nothing of ours, so every part of workmem can speak it. The few
 * shapes the events carry are defined here and re-exported where they belong.
 */

/** Which history a request carries: all of it (phase 1), none (phase 2), the recent turns (hybrid). */
export type HistoryMode = 'phase1' | 'phase2' | 'hybrid';

export type LLMErrorKind =
  | 'overflow' // the prompt does not fit the model's context
  | 'rate_limit'
  | 'server'
  | 'network'
  | 'timeout'
  | 'aborted'
  | 'auth'
  | 'bad_request'
  | 'bad_response';

/** A plain, serialisable description of a failure, as carried in machine context and events. */
export interface TurnError {
  kind: LLMErrorKind | 'tool' | 'memory' | 'storage' | 'window' | 'internal';
  message: string;
  status?: number;
  retryAfterMs?: number;
  retryable: boolean;
}

/** Chat messages in the Chat Completions wire shape (validated by history/messages.ts). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
/** A message of the conversation, in the Chat Completions shape: what the log keeps and a request sends. */
/** `name`: the participant a client named (Chat Completions' `name`), kept and sent as given. */
export type ChatMessage =
  | { role: 'system'; content: string; name?: string | undefined }
  | { role: 'user'; content: string; name?: string | undefined }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] | undefined; name?: string | undefined }
  | { role: 'tool'; tool_call_id: string; content: string };

/** What the history-mode machine needs to know about the memory's content. */
export interface MemoryHealth {
  /** The content is not one of the templates (whitespace aside). */
  differsFromTemplate: boolean;
  /** Characters of real content: outside comments, headings and whitespace. */
  contentChars: number;
}

export interface PromptTokens {
  /** System prompt, tool definitions and priming. */
  system: number;
  memory: number;
  history: number;
  tail: number;
  /** Our count of the request as sent. */
  counted: number;
  /** The server's count minus ours, from the last reported usage. */
  calibration: number;
  /** counted + calibration: what the request costs. */
  total: number;
  /**
   * Our count of the request before its last message (tools, system prompt, memory, the
   * history carried): the prefix a provider's prompt cache can serve, where the breakpoints go.
   */
  cacheable: number;
  window: number;
  percent: number;
}

/** Input and output tokens as the server reported them; `cached` of `input` came from its prompt cache. */
export interface TokenUsage {
  input: number;
  cached: number;
  output: number;
}

export type ReminderLevel = 'gentle' | 'firm' | 'urgent';
/** Why a reminder came: requests without a write, a full window, a compaction, or unrecorded turns about to leave phase 2's window. */
export type ReminderReason = 'rounds' | 'tokens' | 'compaction' | 'leaving';

export type TurnStatus = 'done' | 'failed' | 'aborted';
/** Who compacted: the model, the system at the threshold, a server's overflow, the auto policy, the user, the horizon, or a summary prepared in the background. */
export type CompactionReason = 'llm' | 'fallback' | 'overflow' | 'auto' | 'manual' | 'horizon' | 'background';

/** How a background summary's model calls ended: ready to swap in, failed (tried again later), or superseded while in flight. */
export type BackgroundStatus = 'ready' | 'failed' | 'superseded';

export type SessionEvent =
  | { type: 'turn_start'; turn: number; promptId: string; text: string }
  | { type: 'memory_loaded'; turn: number; request: number; version: number; bytes: number; detailFiles: number }
  | {
      type: 'reminder';
      turn: number;
      request: number;
      level: ReminderLevel;
      reason: ReminderReason;
      rounds: number;
      tokensPercent: number;
      /** reason 'leaving': the turns about to leave phase 2's window. */
      leaving?: { from: number; to: number };
    }
  | {
      type: 'prompt_built';
      turn: number;
      request: number;
      mode: HistoryMode;
      messages: number;
      range: [number, number];
      /** The pinned messages carried (view indices; those before `range` are sent first); absent: none. */
      pinned?: number[];
      tokens: PromptTokens;
    }
  | { type: 'message_delta'; turn: number; request: number; delta: string }
  | {
      type: 'message_end';
      turn: number;
      request: number;
      seq: number;
      tokens: number;
      message: ChatMessage;
      stop?: 'aborted';
      /** A user message the host pinned. */
      pinned?: true;
    }
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
  /** A summary of the oldest turns is being prepared while the session goes on (`turns`: e.g. "1-12"). */
  | { type: 'background_start'; turn: number; turns: string; messages: number; tokens: number }
  /**
   * Its model calls ended: `usage` is what they cost (as the server reported them), `ms` how long
   * they took (absent when superseded: the calls were stopped). A ready summary is swapped in
   * later (compaction_end, reason background) or dropped.
   */
  | {
      type: 'background_end';
      turn: number;
      status: BackgroundStatus;
      ms?: number;
      usage?: TokenUsage;
      error?: TurnError;
    }
  /** A ready summary no longer covers the history (the model, the user or the horizon compacted it first): it is not used. */
  | { type: 'background_dropped'; turn: number; turns: string }
  | { type: 'retry'; turn: number; request: number; attempt: number; delayMs: number; error: TurnError }
  | {
      type: 'turn_end';
      turn: number;
      promptId: string;
      status: TurnStatus;
      text: string;
      requests: number;
      error?: TurnError;
      /** Summed over the turn's requests whose usage the server reported (absent: none did). */
      usage?: TokenUsage;
    }
  | { type: 'prompt_dropped'; promptId: string; text: string }
  | { type: 'error'; turn?: number; request?: number; error: TurnError; fatal: boolean };

export type SessionEventType = SessionEvent['type'];

/** An event as delivered to listeners: stamped with its session and time. */
export type WorkmemEvent = SessionEvent & { sessionId: string; ts: number };
