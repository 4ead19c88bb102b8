/**
 * Where sessions live on disk (docs/design.md §3):
 * <home>/sessions/--<cwd>--/<session-id>/{messages.jsonl, meta.json, working-memory/}
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.WORKMEM_HOME?.trim() || join(homedir(), '.workmem');
}

/** `/Users/a/proj` → `--Users-a-proj--`: no leading `/`; `/`, `\` and `:` become `-`. */
export function encodeCwd(cwd: string): string {
  return `--${cwd.replace(/^[/\\]/, '').replace(/[/\\:]/g, '-')}--`;
}

export function sessionsRoot(home: string): string {
  return join(home, 'sessions');
}

export function sessionDir(home: string, cwd: string, id: string): string {
  return join(sessionsRoot(home), encodeCwd(cwd), id);
}

export function stateStorePath(home: string): string {
  return join(home, 'state');
}

export const SESSION_FILES = {
  messages: 'messages.jsonl',
  meta: 'meta.json',
  workingMemory: 'working-memory',
  damage: 'damage.json',
  trace: 'trace.jsonl',
} as const;

/** Session ids are UUIDs; anything else given as an id is refused before touching the disk. */
export const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
