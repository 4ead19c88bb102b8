/**
 * A file of a session's working memory for the context view's links (where a compaction
 * archived what it took out): only detail/ and archive/ files, by a plain relative name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findSession } from '../session/index.js';
import { SESSION_FILES } from '../storage/sessionPaths.js';

/** detail/x.md or archive/y/z.md, optionally written as working-memory/detail/x.md. */
const MEMORY_FILE = /^(?:working-memory\/)?((?:detail|archive)(?:\/[\w][\w.-]*)+)$/;

/** An HTTP status and body: the file's content, or why not. */
export async function memoryFile(home: string, sessionId: string, path: string | null): Promise<[number, { content?: string; error?: string }]> {
  const name = MEMORY_FILE.exec(path ?? '')?.[1];
  if (!name || name.split('/').some((s) => s === '..' || s === '.')) {
    return [400, { error: 'only a file in working-memory/detail/ or working-memory/archive/ can be opened' }];
  }
  let dir: string;
  try {
    dir = await findSession(sessionId, { home });
  } catch (error) {
    return [404, { error: (error as Error).message }];
  }
  try {
    return [200, { content: readFileSync(join(dir, SESSION_FILES.workingMemory, name), 'utf8') }];
  } catch {
    return [404, { error: `${name} is not in this session's working memory` }];
  }
}
