/**
 * Phase 2's window of recent turns when recentTurnsStep is over 1: it keeps its first turn
 * from request to request, so the messages after the notebook stay the same and a
 * provider's cache serves them. It starts again at the last recentTurns turns when the
 * notebook changes (everything after it is sent uncached then anyway) or when it would
 * carry more than recentTurns + recentTurnsStep - 1 earlier turns.
 *
 * The window is kept in the session's meta with a key of the base it was held under, so a
 * session resumed by another process (`workmem run -c`, another instance) carries on with
 * it when its notebook is the same, and sends what an uninterrupted session would.
 */
import { createHash } from 'node:crypto';
import type { PromptBase } from '../prompt/promptBuilder.js';
import type { TurnSettings } from '../settings/settings.js';

export interface RecentWindow {
  /** The first turn carried. */
  from: number;
  /** Restored from a saved session: baseKey of the prompt base it was held under. */
  base?: string;
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

/**
 * What a prompt base sends, as a key: in one process a base is the same object while the
 * notebook stays; across processes the same text is the same base.
 */
export function baseKey(base: PromptBase): string {
  const sent = [base.systemContent, base.memoryHead ?? '', base.memoryPosition ?? 'before-history', base.today ?? ''];
  return createHash('sha256').update(JSON.stringify(sent)).digest('base64url');
}

/** Whether the next request's base differs from the last one's: by identity in one process, by key after a resume. */
export function baseChanged(base: PromptBase, previous: PromptBase | null, window: RecentWindow | null | undefined): boolean {
  if (previous) return base !== previous;
  return window?.base === undefined || window.base !== baseKey(base);
}
