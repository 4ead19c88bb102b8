/**
 * One writer per session across instances: the session's row in `leases` names its
 * holder, when the lease expires (by the server's clock, so hosts' clocks never disagree)
 * and a fencing token that grows at every takeover. Every write checks the token under a
 * share lock on that row (see fence()), so a holder paused past its expiry and taken over
 * can write nothing when it comes back; a takeover waits for a write in flight to commit,
 * and a holder paused inside a write has it ended by the server after a lease's length.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { PoolClient } from 'pg';
import type { Lease } from '../sessionStore.js';
import { LeaseLostError, SessionInUseError, SessionNotFoundError } from '../storeErrors.js';
import type { Database } from './database.js';

export interface LeaseTiming {
  /** How long a lease runs without being renewed (default 30 s). */
  leaseMs: number;
  /** How often an open session renews it (default a third of leaseMs; 0: never on its own). */
  renewMs: number;
}

/** This instance, as a holder names it: `pid 123 on host (instance 9f2c…)`. */
export function holderName(): string {
  return `pid ${process.pid} on ${hostname()} (instance ${randomBytes(4).toString('hex')})`;
}

/** The CTE that fences a write: it yields a row only while `token` ($2) is the session's ($1). */
export function fence(s: string): string {
  return `fence AS (SELECT token FROM ${s}.leases WHERE session_id = $1 AND token = $2 FOR SHARE)`;
}

/** In a transaction: hold the lease's row while our token is current (a takeover waits for the commit), or throw LeaseLostError. */
export async function holdFence(client: PoolClient, s: string, id: string, token: string): Promise<void> {
  const held = await client.query(`WITH ${fence(s)} SELECT token FROM fence`, [id, token]);
  if (!held.rowCount) throw await leaseLost(client, s, id, token);
}

/** Take the lease of session `id`: the new token and the session's last seq, or SessionInUseError naming the holder. */
export async function takeLease(
  db: Database,
  id: string,
  holder: string,
  leaseMs: number,
): Promise<{ token: string; lastSeq: number; cwd: string }> {
  const { s } = db;
  const taken = await db.query<{ token: string; last_seq: string; cwd: string }>(
    `UPDATE ${s}.leases SET holder = $2, token = token + 1, expires_at = clock_timestamp() + $3 * interval '1 millisecond'
     WHERE session_id = $1 AND expires_at <= clock_timestamp()
     RETURNING token,
       (SELECT coalesce(max(seq), 0) FROM ${s}.entries WHERE session_id = $1) AS last_seq,
       (SELECT cwd FROM ${s}.sessions WHERE id = $1) AS cwd`,
    [id, holder, leaseMs],
  );
  if (taken[0]) return { token: taken[0].token, lastSeq: Number(taken[0].last_seq), cwd: taken[0].cwd };
  const held = await db.query<{ holder: string; until: number }>(
    `SELECT holder, (extract(epoch FROM expires_at) * 1000)::float8 AS until FROM ${s}.leases WHERE session_id = $1`,
    [id],
  );
  if (!held[0]) throw new SessionNotFoundError(`no session with id ${id} in ${db.location}`);
  throw inUse(id, held[0].holder, Math.round(held[0].until));
}

/** Refused: `holder` has session `id` until `until`. */
export function inUse(id: string, holder: string, until: number): SessionInUseError {
  const match = /^pid (\d+) on (.*) \(instance \w+\)$/.exec(holder);
  return new SessionInUseError(
    `session ${id} is in use by ${holder} until ${new Date(until).toISOString()}: its lease is renewed while the session is open, ` +
      'and taken over only when it expires. Wait for it to close, or stop that process.',
    match ? Number(match[1]) : null,
    match ? match[2]! : null,
    until,
  );
}

/** Why a fenced write wrote nothing: the lease was taken over (or the session removed). */
export async function leaseLost(db: Database | PoolClient, s: string, id: string, token: string): Promise<LeaseLostError> {
  const sql = `SELECT token, holder FROM ${s}.leases WHERE session_id = $1`;
  const rows = 'location' in db ? await db.query<{ token: string; holder: string }>(sql, [id]) : (await db.query(sql, [id])).rows;
  const now = rows[0] as { token: string; holder: string } | undefined;
  return new LeaseLostError(
    now
      ? `session ${id}: its lease was taken over by ${now.holder} (token ${now.token}, ours ${token}); nothing was written`
      : `session ${id} was removed; nothing was written`,
  );
}

/** The lease an open session holds: renewed on a timer (unref'd), released on close. */
export class PostgresLease implements Lease {
  private timer: NodeJS.Timeout | null = null;
  private released = false;
  /** The renewal in flight, if any: at most one at a time (a faster one could land first and a slower one after the release); release waits for it. */
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly db: Database,
    private readonly id: string,
    readonly token: string,
    readonly holder: string,
    private readonly timing: LeaseTiming,
  ) {
    if (timing.renewMs > 0) {
      // A failed renewal is not fatal here: the next write is fenced, and says so.
      this.timer = setInterval(() => void this.renew().catch(() => {}), timing.renewMs);
      this.timer.unref();
    }
  }

  async renew(): Promise<void> {
    if (this.released) throw new LeaseLostError(`session ${this.id}: its lease was released`);
    if (this.renewing) return this.renewing;
    const renewal = this.extend().finally(() => {
      if (this.renewing === renewal) this.renewing = null;
    });
    this.renewing = renewal;
    return renewal;
  }

  private async extend(): Promise<void> {
    const { s } = this.db;
    const rows = await this.db.query(
      `UPDATE ${s}.leases SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
       WHERE session_id = $1 AND token = $2 RETURNING token`,
      [this.id, this.token, this.timing.leaseMs],
    );
    if (!rows.length) {
      this.stop();
      throw await leaseLost(this.db, s, this.id, this.token);
    }
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.stop();
    // A renewal still on its way, on another connection, could land after the release and
    // hold the closed session for a lease more: it goes first.
    await this.renewing?.catch(() => {});
    // Only our own lease: one taken over by a newer token is left alone.
    await this.db.query(`UPDATE ${this.db.s}.leases SET expires_at = '-infinity' WHERE session_id = $1 AND token = $2`, [
      this.id,
      this.token,
    ]);
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
