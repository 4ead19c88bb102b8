/**
 * Phase 2's window of recent turns when recentTurnsStep is over 1: it keeps its first turn
 * from request to request, so the messages after the notebook stay the same and a
 * provider's cache serves them. It starts again at the last recentTurns turns when the
 * notebook changes (everything after it is sent uncached then anyway) or when it would
 * carry more than recentTurns + recentTurnsStep - 1 earlier turns.
 */
import type { TurnSettings } from '../settings/settings.js';

export interface RecentWindow {
  /** The first turn carried. */
  from: number;
}

/** The window of the next request; `notebookChanged`: its memory block differs from the previous request's. */
export function nextWindow(
  previous: RecentWindow | null | undefined,
  turn: number,
  notebookChanged: boolean,
  settings: Pick<TurnSettings, 'recentTurns' | 'recentTurnsStep'>,
): RecentWindow | null {
  if (settings.recentTurnsStep <= 1) return null;
  const most = settings.recentTurns + settings.recentTurnsStep - 1;
  if (previous && !notebookChanged && previous.from <= turn && turn - previous.from <= most) return previous;
  return { from: Math.max(1, turn - settings.recentTurns) };
}
