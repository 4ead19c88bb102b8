/**
 * read / write / edit for the model, confined to the session's working-memory/.
 * Refusals are tool errors the model can read and correct, never exceptions.
 */
import { z } from 'zod';
import { PathRefusedError } from '../errors/pathRefused.js';
import { defineTool, type BuiltInToolOutput, type Tool, type ToolOutput } from './tool.js';
import type { WriteResult } from '../memory/memoryRules.js';
import type { Charge, WorkingMemory } from '../memory/workingMemory.js';
import type { HeldWrites } from '../memory/heldWrites.js';
import { byteSize as size } from '../format/byteSize.js';

const DEFAULT_READ_LINES = 2000;

const ReadParameters = z.object({
  path: z.string().describe('Path inside working-memory/, e.g. working-memory/detail/design.md'),
  offset: z.number().int().min(1).optional().describe('First line to read, 1-based (default 1)'),
  limit: z.number().int().min(1).max(10_000).optional().describe(`Number of lines (default ${DEFAULT_READ_LINES})`),
});
const WriteParameters = z.object({
  path: z.string().describe('Path inside working-memory/, e.g. working-memory/overview.md'),
  content: z.string().describe('The complete new content of the file'),
});
const EditParameters = z.object({
  path: z.string().describe('Path inside working-memory/'),
  old: z.string().min(1).describe('The exact text to replace (must be unique in the file)'),
  new: z.string().describe('The replacement text'),
});

export interface MemoryToolOptions {
  /** Bytes the write and edit tools may write in one turn (300 writes of 230 KB once put 71 MB on disk). */
  writeQuotaBytes?: number;
  /** What the model's writes hold over the session, against the session's quota (six turns once held 10.9 MB). */
  held?: HeldWrites;
  /** The name a tool of these is sent under, for the texts that name one (default its own name). */
  sentName?: (own: string) => string;
}

export const DEFAULT_WRITE_QUOTA_BYTES = 8 * 1024 * 1024;

export function memoryTools(memory: WorkingMemory, options: MemoryToolOptions = {}): Tool[] {
  const quota = options.writeQuotaBytes ?? DEFAULT_WRITE_QUOTA_BYTES;
  const sentName = options.sentName ?? ((own: string) => own);
  const used = { turn: -1, bytes: 0, writes: 0 };
  /** Throws before a write that would pass the session's or the turn's quota; counts it otherwise. */
  const charge =
    (turn: number): Charge =>
    (bytes, path) => {
      options.held?.check(path, bytes);
      if (used.turn !== turn) Object.assign(used, { turn, bytes: 0, writes: 0 });
      if (used.bytes + bytes > quota) {
        throw new PathRefusedError(
          `not written: this turn has already written ${size(used.bytes)} in ${used.writes} writes, and ${size(bytes)} more would pass the quota of ${size(quota)} per turn. Write less (the memory is for notes, not dumps), or continue in the next turn`,
        );
      }
      used.bytes += bytes;
      used.writes++;
    };
  const guarded = async (run: () => ToolOutput | Promise<ToolOutput>): Promise<ToolOutput> => {
    try {
      return await run();
    } catch (error) {
      if (error instanceof PathRefusedError) return { content: `Error: ${error.message}`, isError: true };
      const code = (error as NodeJS.ErrnoException).code;
      return { content: `Error${code ? ` (${code})` : ''}: ${(error as Error).message}`, isError: true };
    }
  };
  /** The result, with the write as its effect (a write of overview.md resets the reminder). */
  const written = (result: WriteResult, verb: string): BuiltInToolOutput => {
    options.held?.held(result.path, result.bytes);
    const lines = [`${verb} ${result.path} (${result.bytes} bytes).`];
    if (result.warning) lines.push(`Warning: ${result.warning}`);
    const { path, bytes, isOverview, warning } = result;
    return { content: lines.join('\n'), effects: { memoryWrite: { path, bytes, isOverview, ...(warning ? { warning } : {}) } } };
  };

  return [
    defineTool({
      name: 'read',
      description:
        'Read a file from your working memory (working-memory/...), e.g. a detail/ file listed in <detail_index>. ' +
        'offset is the first line to return (1-based), limit the number of lines.',
      parameters: ReadParameters,
      execute: ({ path, offset, limit }) =>
        guarded(async () => {
          const { text, totalLines, from, to } = await memory.read(path, { offset: (offset ?? 1) - 1, limit: limit ?? DEFAULT_READ_LINES });
          if (from === 0 && to === totalLines) return text;
          const more = to < totalLines ? `; call ${sentName('read')} with offset=${to + 1} for more` : '';
          return `${text}\n\n[lines ${from + 1}-${to} of ${totalLines}${more}]`;
        }),
    }),
    defineTool({
      name: 'write',
      description:
        'Write a whole file in your working memory, replacing it. Use it for working-memory/overview.md (your memory, ' +
        'shown on every request; keep it under 5 KB) and for notes in working-memory/detail/ or working-memory/archive/.',
      parameters: WriteParameters,
      execute: ({ path, content }, context) =>
        guarded(async () => written(await memory.write(path, content, charge(context.turn)), 'Wrote')),
    }),
    defineTool({
      name: 'edit',
      description: 'Replace one passage of a working-memory file: old must occur exactly once in the file; it is replaced by new.',
      parameters: EditParameters,
      execute: ({ path, old, new: replacement }, context) =>
        guarded(async () => written(await memory.edit(path, old, replacement, charge(context.turn)), 'Edited')),
    }),
  ];
}
