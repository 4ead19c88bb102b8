/**
 * The rules of working memory, whatever stores it: size limits, paths workmem owns, the
 * uniqueness of an edit, what a write reports. Pure, so that WorkingMemory applies the
 * same rules over any store's memory files.
 */
import { PathRefusedError } from '../errors/pathRefused.js';
import type { MemoryHealth } from './memoryTemplate.js';

export const OVERVIEW = 'overview.md';
export const OVERVIEW_PATH = 'working-memory/overview.md';
export const OVERVIEW_SOFT_LIMIT = 5 * 1024;
/** Any one working-memory file; larger writes are refused (a memory, not a dump). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** overview.md goes into every request: beyond this it would crowd out the conversation. */
export const OVERVIEW_MAX_BYTES = 32 * 1024;
/** An overview.md placed by hand may be larger than a write allows, but not beyond this. */
export const OVERVIEW_READ_MAX_BYTES = MAX_FILE_BYTES;
/** How much of a detail file is read to find its heading. */
export const HEADING_SCAN_BYTES = 4096;
/** What the read tool may read of one file. */
export const READ_MAX_BYTES = 50 * MAX_FILE_BYTES;

export interface DetailEntry {
  /** Relative to working-memory/, e.g. `detail/design.md`; a directory ends with `/`. */
  path: string;
  bytes: number;
  heading: string | null;
}

/** Full outputs of capped tool results: one stable line in the index, never walked. */
export const TOOL_OUTPUTS_DIR = 'detail/tool-outputs';

export interface MemorySnapshot {
  /** Changes whenever the content or the detail index changes. */
  version: number;
  content: string;
  bytes: number;
  health: MemoryHealth;
  detail: readonly DetailEntry[];
  /** Item memories relevant to the latest user message, when that injection is on. */
  relevant?: string;
  /** The session clock's day when loaded (YYYY-MM-DD), for the file names the reminder suggests. */
  today?: string;
}

export interface WriteResult {
  path: string;
  bytes: number;
  created: boolean;
  isOverview: boolean;
  warning?: string;
}

/** Why the model may not write `rel` (a path workmem owns), or null. */
export function reservedPath(rel: string): string | null {
  const lower = rel.toLowerCase();
  if (lower === TOOL_OUTPUTS_DIR || lower.startsWith(`${TOOL_OUTPUTS_DIR}/`))
    return `${rel} is reserved: ${TOOL_OUTPUTS_DIR}/ is workmem's own folder for saved tool outputs (read them, but write elsewhere in detail/)`;
  return null;
}

export function refuseReserved(rel: string): void {
  const reserved = reservedPath(rel);
  if (reserved) throw new PathRefusedError(reserved);
}

/** A write by the model: within the file limit, and overview.md within its own. */
export function checkWriteSize(rel: string, bytes: number): void {
  if (bytes > MAX_FILE_BYTES) {
    throw new PathRefusedError(`content is ${bytes} bytes; a working-memory file may hold at most ${MAX_FILE_BYTES}`);
  }
  checkOverviewSize(rel, bytes);
}

export function checkOverviewSize(rel: string, bytes: number): void {
  if (rel !== OVERVIEW || bytes <= OVERVIEW_MAX_BYTES) return;
  throw new PathRefusedError(
    `overview.md would be ${(bytes / 1024).toFixed(1)} KB; it is sent with every request, so it may hold at most ${OVERVIEW_MAX_BYTES / 1024} KB (aim for 5 KB): move details to working-memory/detail/ files`,
  );
}

/** `current` with the one occurrence of `oldText` replaced, within the limits; refused when it is absent or not unique. */
export function replaceOnce(rel: string, current: string, oldText: string, newText: string): { text: string; bytes: number } {
  if (oldText.length === 0) throw new PathRefusedError('old text is empty; use write to replace a whole file');
  const first = current.indexOf(oldText);
  if (first < 0) throw new PathRefusedError(`old text not found in ${rel}`);
  if (current.indexOf(oldText, first + 1) >= 0) {
    throw new PathRefusedError(`old text occurs more than once in ${rel}; include more context to make it unique`);
  }
  const text = current.slice(0, first) + newText + current.slice(first + oldText.length);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_FILE_BYTES) throw new PathRefusedError(`result would be ${bytes} bytes; the limit is ${MAX_FILE_BYTES}`);
  checkOverviewSize(rel, bytes);
  return { text, bytes };
}

/** What a write reports, with the overview's size warning. */
export function writeResult(rel: string, bytes: number, created: boolean): WriteResult {
  const isOverview = rel === OVERVIEW;
  const result: WriteResult = { path: `working-memory/${rel}`, bytes, created, isOverview };
  if (isOverview && bytes > OVERVIEW_SOFT_LIMIT) {
    result.warning = `overview.md is ${(bytes / 1024).toFixed(1)} KB, over the 5 KB guideline: move details to working-memory/detail/ and keep the overview short.`;
  }
  return result;
}

/** Lines `offset` to `offset + limit` of a file's text. */
export function sliceLines(
  text: string,
  options: { offset?: number; limit?: number },
): { text: string; totalLines: number; from: number; to: number } {
  const lines = text.split('\n');
  const from = Math.max(0, options.offset ?? 0);
  const to = Math.min(lines.length, from + (options.limit ?? lines.length));
  return { text: lines.slice(from, to).join('\n'), totalLines: lines.length, from, to };
}

export function overviewTooLarge(bytes: number): PathRefusedError {
  return new PathRefusedError(
    `${OVERVIEW_PATH} is ${mb(bytes)}; it is sent with every request, so it may hold at most ${mb(OVERVIEW_READ_MAX_BYTES)}: shorten it, or move its content to working-memory/detail/ files`,
  );
}

export function overviewIsLink(): PathRefusedError {
  return new PathRefusedError(
    `${OVERVIEW_PATH} is a symlink; refused (its target would be sent to the model with every request): replace it with a regular file`,
  );
}

/** The first markdown heading in a file's first bytes. */
export function headingOf(head: string): string | null {
  const match = /^#{1,6}\s+(.+)$/m.exec(head);
  // A copy of its own: a slice would keep the whole head it was cut from (4 KB per detail file) alive in the index.
  return match ? Buffer.from(match[1]!.trim().slice(0, 120), 'utf8').toString('utf8') : null;
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
