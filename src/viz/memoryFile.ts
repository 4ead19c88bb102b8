/**
 * A file of a session's working memory for the context view's links (where a compaction
 * archived what it took out): only detail/ and archive/ files, by a plain relative name,
 * read through the store without the session's lease (so a session in Postgres, or one
 * another process is running, opens as well).
 */
import { readSession } from '../session/index.js';
import type { SessionStore } from '../storage/sessionStore.js';

/** detail/x.md or archive/y/z.md, optionally written as working-memory/detail/x.md. */
const MEMORY_FILE = /^(?:working-memory\/)?((?:detail|archive)(?:\/[\w][\w.-]*)+)$/;
/** An archive is text a person reads in the page; anything larger is refused rather than sent. */
const MAX_BYTES = 8 * 1024 * 1024;

/** An HTTP status and body: the file's content, or why not. */
export async function memoryFile(
  where: { home: string; store?: SessionStore },
  sessionId: string,
  path: string | null,
): Promise<[number, { content?: string; error?: string }]> {
  const name = MEMORY_FILE.exec(path ?? '')?.[1];
  if (!name || name.split('/').some((s) => s === '..' || s === '.')) {
    return [400, { error: 'only a file in working-memory/detail/ or working-memory/archive/ can be opened' }];
  }
  let session: Awaited<ReturnType<typeof readSession>>;
  try {
    session = await readSession(sessionId, where);
  } catch (error) {
    return [404, { error: (error as Error).message }];
  }
  try {
    return [200, { content: await session.memory.read(name, { maxBytes: MAX_BYTES }) }];
  } catch {
    return [404, { error: `${name} is not in this session's working memory` }];
  }
}
