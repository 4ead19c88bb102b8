/**
 * The token `workmem serve` asks of its clients when none is given: made once and kept in
 * the home (`<home>/serve-token`, readable by its owner only), so that clients configured with
 * it (OPENAI_API_KEY=<token>) go on working after the proxy restarts.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { newToken } from '../trace/liveProtocol.js';
import { writeFileAtomic } from '../storage/atomicWrite.js';
import { diskIOFor } from '../storage/diskIO.js';

export const SERVE_TOKEN_FILE = 'serve-token';

/** The home's serve token: read, or made and kept. */
export async function homeServeToken(home: string): Promise<{ token: string; path: string }> {
  const path = join(home, SERVE_TOKEN_FILE);
  try {
    const kept = readFileSync(path, 'utf8').trim();
    if (kept.length >= 16) return { token: kept, path };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const token = newToken();
  await writeFileAtomic(path, `${token}\n`, { io: diskIOFor(home) });
  return { token, path };
}
