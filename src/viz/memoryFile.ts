/**
 * A file of a session's working memory for the context view's links (where a compaction
 * archived what it took out): only detail/ and archive/ files, by a plain relative name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SESSION_FILES } from '../storage/sessionPaths.js';

/** detail/x.md or archive/y/z.md, optionally written as working-memory/detail/x.md. */
const MEMORY_FILE = /^(?:working-memory\/)?((?:detail|archive)(?:\/[\w][\w.-]*)+)$/;

export function memoryFile(sessionDir: string, path: string | null): { status: number; body: { content?: string; error?: string } } {
  const name = MEMORY_FILE.exec(path ?? '')?.[1];
  if (!name || name.split('/').some((s) => s === '..' || s === '.')) {
    return { status: 400, body: { error: 'only a file in working-memory/detail/ or working-memory/archive/ can be opened' } };
  }
  try {
    return { status: 200, body: { content: readFileSync(join(sessionDir, SESSION_FILES.workingMemory, name), 'utf8') } };
  } catch {
    return { status: 404, body: { error: `${name} is not in this session's working memory` } };
  }
}
