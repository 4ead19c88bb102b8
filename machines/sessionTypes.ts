/**
 * What a session machine is given, and the port its actors reach the world through (the
 * turn's host and the session's own actors): the types sessionMachine.ts and src/actors/ agree on.
 */
import type { HistoryMode, HistoryView } from '../src/history/historyView.js';
import type { MemoryHealth } from '../src/memory/memoryTemplate.js';
import type { RecentWindow } from '../src/history/recentWindow.js';
import type { TrackerState } from '../src/memory/reminderTracker.js';
import type { TurnHost, TurnOutput, TurnStatics } from './turnTypes.js';

export interface QueuedPrompt {
  id: string;
  text: string;
}

/** The turn's host, and what the session's own actors do. */
export interface SessionHost extends TurnHost {
  accept(input: AcceptInput): Promise<AcceptOutput>;
  save(input: SaveInput): Promise<SaveOutput>;
  persistMode(input: PersistModeInput): Promise<void>;
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
/** A mode was switched or pinned: kept at once (meta), and a switch is recorded in the log. */
export interface PersistModeInput extends SessionHostInput {
  turn: number;
  from: HistoryMode;
  to: HistoryMode;
  pinned: HistoryMode | null;
}
