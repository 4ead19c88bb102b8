/**
 * meta.json's shape: what a session says about itself (name, title, counts, mode). Every
 * store keeps one per session; it is a cache of the log, never its authority.
 */
import { z } from 'zod';

const MODES = ['phase1', 'phase2', 'hybrid'] as const;

export const SessionMetaSchema = z.object({
  format: z.literal(1),
  id: z.string(),
  name: z.string().nullable(),
  title: z.string().nullable(),
  cwd: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
  messageCount: z.number().int().nonnegative(),
  turns: z.number().int().nonnegative(),
  historyMode: z.enum(MODES),
  pinnedMode: z.enum(MODES).nullable(),
  memoryWrites: z.number().int().nonnegative(),
  calibration: z.number().int(),
  model: z.string().nullable(),
  language: z.enum(['en', 'zh']),
  /**
   * Phase 2's held window (recentWindow.ts; `from` 0: none), and the memory block the last
   * request carried in its place (`anchor`, memoryRefresh 'when-cheap': the next one may hold
   * on to it, the changes since going in the tail), so a resumed session carries on with them.
   */
  recentWindow: z.object({ from: z.number().int().nonnegative(), base: z.string(), anchor: z.string().optional() }).nullable().optional(),
});
export type SessionMeta = z.infer<typeof SessionMetaSchema>;

/** The meta of a session just created at `at`: no messages, phase 1, nothing written yet. */
export function newSessionMeta(o: {
  id: string;
  cwd: string;
  at: number;
  name?: string | null;
  model?: string | null;
  language?: SessionMeta['language'];
}): SessionMeta {
  return {
    format: 1,
    id: o.id,
    name: o.name ?? null,
    title: null,
    cwd: o.cwd,
    createdAt: o.at,
    updatedAt: o.at,
    messageCount: 0,
    turns: 0,
    historyMode: 'phase1',
    pinnedMode: null,
    memoryWrites: 0,
    calibration: 0,
    model: o.model ?? null,
    language: o.language ?? 'en',
  };
}

/** What opening found wrong and did about it, for the damage report. */
export interface Repair {
  what: string;
  where: string;
  done: string;
}

export function describeRepair(repair: Repair): string {
  return `${repair.what} (${repair.where}): ${repair.done}`;
}

/** The first line of a parse error, in words that say which field. */
export function firstLine(error: unknown): string {
  if (error instanceof z.ZodError) {
    const issue = error.issues[0]!;
    return `${issue.path.join('.') || 'the file'}: ${issue.message}`;
  }
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200);
}
