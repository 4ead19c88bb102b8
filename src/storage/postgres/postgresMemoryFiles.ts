/**
 * A session's working-memory/ as rows of `memory_files`: a file's text and a version
 * that grows at every write, folders as rows of their own (made on the way, their version
 * grown when an entry is added). Paths are confined by the same rules as on disk
 * (confinedSegments); there are no links to follow. Every write is one transaction that
 * first checks the lease's token (fence), so a write is whole or absent, never a stale
 * holder's.
 */
import type { PoolClient } from 'pg';
import { confinedSegments, PathRefusedError } from '../sandboxPath.js';
import type { MemoryEntry, MemoryFiles } from '../sessionStore.js';
import type { Database } from './database.js';
import { holdFence } from './postgresLease.js';

const PREFIX = 'working-memory/';

interface Row {
  path: string;
  kind: 'file' | 'folder';
  bytes: number | null;
  version: string;
}

export class PostgresMemoryFiles implements MemoryFiles {
  constructor(
    private readonly db: Database,
    private readonly sessionId: string,
    private readonly token: string,
    /** The session's location and `/working-memory`, for tools and messages. */
    readonly location: string,
  ) {}

  async read(path: string, options: { maxBytes: number; head?: boolean }): Promise<string> {
    const rel = relOf(path);
    const rows = await this.db.query<{ kind: string; bytes: number | null; content: string | null }>(
      `SELECT kind, octet_length(content) AS bytes, CASE WHEN $3 OR octet_length(content) <= $4 THEN content END AS content
       FROM ${this.db.s}.memory_files WHERE session_id = $1 AND path = $2`,
      [this.sessionId, rel, options.head === true, options.maxBytes],
    );
    const row = rows[0];
    if (!row) throw new PathRefusedError(`file not found: ${JSON.stringify(path)}`);
    if (row.kind !== 'file') throw new PathRefusedError(`${JSON.stringify(path)} is a directory, not a file`);
    if (options.head)
      return Buffer.from(row.content ?? '')
        .subarray(0, options.maxBytes)
        .toString('utf8');
    if (row.content === null) throw new PathRefusedError(`${rel} is ${row.bytes} bytes; too large to read`);
    return row.content;
  }

  async write(path: string, content: string): Promise<{ created: boolean }> {
    const rel = relOf(path);
    return this.fenced(async (client) => ({ created: (await this.writeIn(client, rel, content, false)).created }));
  }

  async append(path: string, section: string): Promise<{ created: boolean; bytes: number }> {
    const rel = relOf(path);
    return this.fenced((client) => this.writeIn(client, rel, section, true));
  }

  /** A path as stored: relative to working-memory/, confined (PathRefusedError otherwise). */
  relOf(path: string): string {
    return relOf(path);
  }

  /**
   * Replace `rel` (or add a section to it) inside a transaction that already holds the
   * lease's row: for a write that commits together with a log entry (a compaction).
   */
  async writeIn(client: PoolClient, rel: string, text: string, append: boolean): Promise<{ created: boolean; bytes: number }> {
    const { s } = this.db;
    const parts = rel.split('/');
    const ancestors = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
    const { rows } = await client.query<{ path: string; kind: string; content: string | null }>(
      `SELECT path, kind, CASE WHEN path = $3 AND $4 THEN content END AS content FROM ${s}.memory_files
       WHERE session_id = $1 AND path = ANY($2) FOR UPDATE`,
      [this.sessionId, [...ancestors, rel], rel, append],
    );
    let before: string | null = null;
    for (const row of rows) {
      if (row.path === rel && row.kind !== 'file') throw new PathRefusedError(`${rel} exists and is not a regular file`);
      if (row.path !== rel && row.kind !== 'folder') throw new PathRefusedError(`${JSON.stringify(row.path)} is not a directory`);
      if (row.path === rel) before = row.content;
    }
    const content = append && before !== null ? `${before.trimEnd()}\n\n---\n\n${text}` : text;
    return { created: await this.put(client, rel, content), bytes: Buffer.byteLength(content) };
  }

  async list(folder: string): Promise<MemoryEntry[]> {
    const base = folder === '.' || folder === '' || folder === PREFIX.slice(0, -1) ? '' : relOf(folder);
    const rows = await this.db.query<Row>(
      `SELECT path, kind, octet_length(content) AS bytes, version FROM ${this.db.s}.memory_files WHERE session_id = $1 AND parent = $2`,
      [this.sessionId, base],
    );
    return rows.map(entryOf).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async exists(path: string): Promise<boolean> {
    return (await this.stat(path)) !== null;
  }

  async stat(path: string): Promise<MemoryEntry | null> {
    const rows = await this.db.query<Row>(
      `SELECT path, kind, octet_length(content) AS bytes, version FROM ${this.db.s}.memory_files WHERE session_id = $1 AND path = $2`,
      [this.sessionId, relOf(path)],
    );
    return rows[0] ? entryOf(rows[0]) : null;
  }

  async statAll(paths: readonly string[]): Promise<(MemoryEntry | null)[]> {
    const rels = paths.map(relOf);
    const rows = await this.db.query<Row>(
      `SELECT path, kind, octet_length(content) AS bytes, version FROM ${this.db.s}.memory_files WHERE session_id = $1 AND path = ANY($2)`,
      [this.sessionId, rels],
    );
    const byPath = new Map(rows.map((r) => [r.path, r]));
    return rels.map((rel) => {
      const row = byPath.get(rel);
      return row ? entryOf(row) : null;
    });
  }

  /** Run `write` in a transaction holding the lease's row (or refuse: LeaseLostError). */
  private fenced<T>(write: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.db.transaction(async (client) => {
      await holdFence(client, this.db.s, this.sessionId, this.token);
      return write(client);
    });
  }

  /** Replace or create the file `rel` (its folders made): true when it was created. */
  private async put(client: PoolClient, rel: string, content: string): Promise<boolean> {
    const { s } = this.db;
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) await this.addEntry(client, parts.slice(0, i).join('/'), 'folder', null);
    const { rows } = await client.query<{ created: boolean }>(
      `UPDATE ${s}.memory_files SET content = $3, version = version + 1 WHERE session_id = $1 AND path = $2 RETURNING false AS created`,
      [this.sessionId, rel, content],
    );
    if (rows.length) return false;
    await this.addEntry(client, rel, 'file', content);
    return true;
  }

  /** Add an entry unless it is there, growing its folder's version when it was not. */
  private async addEntry(client: PoolClient, rel: string, kind: 'file' | 'folder', content: string | null): Promise<void> {
    const { s } = this.db;
    const parent = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    const added = await client.query(
      `INSERT INTO ${s}.memory_files (session_id, path, parent, kind, content) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (session_id, path) DO NOTHING`,
      [this.sessionId, rel, parent, kind, content],
    );
    if (added.rowCount && parent) {
      await client.query(`UPDATE ${s}.memory_files SET version = version + 1 WHERE session_id = $1 AND path = $2`, [
        this.sessionId,
        parent,
      ]);
    }
  }
}

/** The folders every session has, made when it is created. */
export const LAYOUT = ['detail', 'archive'];

function relOf(path: string): string {
  return confinedSegments(path, PREFIX).join('/');
}

function entryOf(row: Row): MemoryEntry {
  return {
    path: row.path,
    kind: row.kind,
    bytes: row.kind === 'file' ? Number(row.bytes ?? 0) : 0,
    version: String(row.version),
    aliased: false,
  };
}
