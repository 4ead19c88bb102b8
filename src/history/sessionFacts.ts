/**
 * What a session's log says, whatever store keeps it: the tracker's facts about memory
 * updates, a meta rebuilt when the stored one is damaged, a session's title.
 */
import type { TrackerFacts } from '../memory/reminderTracker.js';
import type { LogEntry } from '../storage/messageLog.js';
import { newSessionMeta, type SessionMeta } from '../storage/sessionMeta.js';
import type { HistoryMode } from './historyView.js';
import type { ChatMessage } from './messages.js';

const TITLE_CHARS = 80;

export function trackerFactsOf(entries: readonly LogEntry[]): TrackerFacts {
  let updates = 0;
  let lastUpdateAt: number | null = null;
  let requestsSinceUpdate = 0;
  for (const entry of entries) {
    if (entry.type === 'event' && entry.name === 'memory_updated') {
      updates++;
      lastUpdateAt = entry.ts;
      requestsSinceUpdate = 0;
    } else if (entry.type === 'message' && entry.message.role === 'assistant') requestsSinceUpdate++;
  }
  return { updates, lastUpdateAt, requestsSinceUpdate };
}

/**
 * meta as the log says it, for the session at `location` (its last part is the id); the
 * cwd is `cwd` where the store keeps it, else the folder above (as the filesystem encodes it).
 */
export function rebuildMeta(location: string, entries: LogEntry[], lastTurn: number, now: number, cwd?: string): SessionMeta {
  const id = location.split(/[/\\]/).pop()!;
  let title: string | null = null;
  let historyMode: HistoryMode = 'phase1';
  let pinnedMode: HistoryMode | null = null;
  let memoryWrites = 0;
  let messageCount = 0;
  for (const entry of entries) {
    if (entry.type === 'message') {
      messageCount++;
      title ??= titleFrom(entry.turn, entry.message, entry.pinned === true);
    } else if (entry.type === 'event' && entry.name === 'mode_changed') {
      const to = entry.data.to;
      if (to === 'phase1' || to === 'phase2' || to === 'hybrid') {
        historyMode = to;
        pinnedMode = entry.data.pinned === true ? to : null;
      }
    } else if (entry.type === 'event' && entry.name === 'memory_updated') {
      memoryWrites++;
    }
  }
  const cwdDir = location.split(/[/\\]/).slice(-2, -1)[0] ?? '';
  return {
    ...newSessionMeta({ id, cwd: cwd ?? cwdDir, at: entries[0]?.ts ?? now }),
    title,
    updatedAt: now,
    messageCount,
    turns: lastTurn,
    historyMode,
    pinnedMode,
    memoryWrites,
  };
}

/**
 * The title a message gives a session that has none: a user message's first line, unless
 * it was pinned before the first turn (the rules a session is created with, not its subject).
 */
export function titleFrom(turn: number, message: ChatMessage, pinned: boolean): string | null {
  return message.role === 'user' && !(turn === 0 && pinned) ? titleOf(message.content) : null;
}

export function titleOf(text: string): string {
  // What an agent puts before the user's words (<system-reminder>…</system-reminder> blocks, Qwen Code's) is not the title.
  const words = text.replace(/(^|\n)\s*<([a-z][\w-]*)\b[^>]*>[\s\S]*?<\/\2>[ \t]*(?=\n|$)/gi, '$1').trim();
  const line = (words || text.trim()).split('\n')[0] ?? '';
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1)}…` : line;
}
