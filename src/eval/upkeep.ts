/**
 * How a workmem arm kept its memory, read off the session's events as they happen: memory
 * writes, reminders fired and heeded (a memory write in the response to the reminded
 * request or to the next one), compactions by who made them (compaction_end's reason: the
 * model's compact_history is `llm`), the turn phase 2 began, tool calls that failed, and
 * answers that hold tool calls written as text.
 */
import type { CompactionReason, WorkmemEvent } from '../events.js';

/** A workmem arm's upkeep over one conversation. */
export interface Upkeep {
  memoryWrites: number;
  reminders: number;
  /** Reminders followed by a memory write within 2 requests (the reminded one and the next). */
  heeded: number;
  compactions: Partial<Record<CompactionReason, number>>;
  /** The model's compact_history calls that were carried out, whether they compacted or not (under compactHistoryFloor, or nothing to compact). */
  compactCalls: number;
  /** The conversation's turn (0-based) at which phase 2 began; null: it never did. */
  phase2At: number | null;
  /** Tool calls whose result was an error (malformed arguments, unknown tools, refused writes). */
  toolErrors: number;
  /** Answers that hold a tool call written as text instead of made. */
  textToolCalls: number;
}

/** Requests within which a write heeds a reminder: the reminded one and the next. */
const HEED_WITHIN = 2;
const TOOL_CALL_AS_TEXT = /<tool_call>|<function=|"arguments"\s*:|"name"\s*:\s*"(?:write|edit|compact_history|read)"/;

/** Whether an answer holds a tool call written as text instead of made. */
export function holdsTextToolCall(answer: string): boolean {
  return TOOL_CALL_AS_TEXT.test(answer);
}

/** Follows a session's events; `turn` is the conversation's turn being played. */
export class UpkeepTracker {
  turn = 0;
  private requests = 0;
  private readonly pending: number[] = [];
  readonly upkeep: Upkeep = {
    memoryWrites: 0,
    reminders: 0,
    heeded: 0,
    compactions: {},
    compactCalls: 0,
    phase2At: null,
    toolErrors: 0,
    textToolCalls: 0,
  };

  readonly onEvent = (event: WorkmemEvent): void => {
    const u = this.upkeep;
    switch (event.type) {
      case 'prompt_built':
        this.requests++;
        // A reminder no longer in reach is dropped.
        while (this.pending.length && this.requests - 1 - this.pending[0]! >= HEED_WITHIN) this.pending.shift();
        break;
      case 'reminder':
        u.reminders++;
        // It goes out with the next request built.
        this.pending.push(this.requests);
        break;
      case 'memory_updated':
        u.memoryWrites++;
        u.heeded += this.pending.splice(0).length;
        break;
      case 'compaction_end':
        if (event.replaced > 0) u.compactions[event.reason] = (u.compactions[event.reason] ?? 0) + 1;
        break;
      case 'mode_changed':
        if (event.to === 'phase2' && u.phase2At === null) u.phase2At = this.turn;
        break;
      case 'tool_end':
        if (event.isError) u.toolErrors++;
        else if (event.name === 'compact_history') u.compactCalls++;
        break;
      case 'turn_end':
        if (holdsTextToolCall(event.text)) u.textToolCalls++;
        break;
    }
  };
}
