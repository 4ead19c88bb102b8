/**
 * A session's directory read without its lock (SessionStore.read for the filesystem
 * store): meta.json parsed as it is (never moved aside), messages.jsonl through readLogFile,
 * working-memory/ through FileMemoryFiles' reading methods, trace.jsonl split in lines.
 * Every file is replaced atomically or appended to by the writer, so a read sees whole files.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEMP_DIR } from './atomicWrite.js';
import { FileMemoryFiles } from './fileMemoryFiles.js';
import { readLogFile } from './messageLog.js';
import { inlineDiskIO } from './diskIO.js';
import { firstLine, SessionMetaSchema } from './sessionMeta.js';
import { SESSION_FILES } from './sessionPaths.js';
import type { LogRead, MemoryReader, MetaRead, SessionReader } from './sessionStore.js';

export class FileSessionReader implements SessionReader {
  readonly memory: MemoryReader;

  constructor(
    readonly id: string,
    /** The session's directory. */
    readonly location: string,
  ) {
    // A reader writes nothing: its IO is never used.
    this.memory = new FileMemoryFiles(join(location, SESSION_FILES.workingMemory), join(location, TEMP_DIR), inlineDiskIO());
  }

  async readMeta(): Promise<MetaRead> {
    try {
      return { ok: true, meta: SessionMetaSchema.parse(JSON.parse(readFileSync(join(this.location, SESSION_FILES.meta), 'utf8'))) };
    } catch (error) {
      return { ok: false, problem: `meta.json unreadable (${firstLine(error)})` };
    }
  }

  async readLog(): Promise<LogRead> {
    const { entries, damage } = await readLogFile(join(this.location, SESSION_FILES.messages));
    return { entries, damage };
  }

  async readTrace(): Promise<string[]> {
    let text: string;
    try {
      text = readFileSync(join(this.location, SESSION_FILES.trace), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    return lines;
  }
}
