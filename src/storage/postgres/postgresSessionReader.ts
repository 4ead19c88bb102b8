/**
 * A session in Postgres read without its lease (SessionStore.read): plain SELECTs, no
 * token, nothing written, so it works while another instance holds the session. Each
 * call is its own statement and sees what was committed by then.
 */
import type { LogRead, MemoryReader, MetaRead, SessionReader } from '../sessionStore.js';
import type { Database } from './database.js';
import { PostgresMemoryFiles } from './postgresMemoryFiles.js';
import { readEntries, readMetaRow } from './postgresSessionStorage.js';

export class PostgresSessionReader implements SessionReader {
  readonly memory: MemoryReader;

  constructor(
    private readonly db: Database,
    readonly id: string,
    readonly location: string,
  ) {
    // Its reading methods only: without a token, its writes could not pass the fence anyway.
    this.memory = new PostgresMemoryFiles(db, id, '', `${location}/working-memory`);
  }

  readMeta(): Promise<MetaRead> {
    return readMetaRow(this.db, this.id);
  }

  readLog(): Promise<LogRead> {
    return readEntries(this.db, this.id);
  }

  async readTrace(): Promise<string[]> {
    const rows = await this.db.query<{ record: string }>(`SELECT record FROM ${this.db.s}.trace WHERE session_id = $1 ORDER BY seq`, [
      this.id,
    ]);
    return rows.map((row) => row.record);
  }
}
