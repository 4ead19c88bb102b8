/**
 * A real PostgreSQL for the tests: $WORKMEM_TEST_DATABASE_URL when set (.ci/run starts
 * one), otherwise one started here — initdb into a temp dir (as the `postgres` user when
 * we are root: initdb refuses root), listening on 127.0.0.1 only at a free port, trust
 * auth for loopback, stopped and removed at the end. Null when neither is available;
 * the tests that need it are then skipped.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';

export interface PostgresServer {
  /** A connection string without a password (trust auth on loopback). */
  url: string;
  /** Stop the server and remove its data (a no-op for a server we did not start). */
  stop(): Promise<void>;
  /** Stop the server (fast: sessions cut), wait `downMs`, start it again; only on a server started here. */
  restart?(downMs?: number): Promise<void>;
}

/** The directory holding initdb and pg_ctl, or null when PostgreSQL is not installed. */
export function postgresBin(): string | null {
  const candidates = ['/usr/local/bin', '/usr/bin', '/usr/lib/postgresql', ...(process.env.PATH ?? '').split(':')];
  for (const dir of candidates) {
    if (dir === '/usr/lib/postgresql') {
      // Debian keeps them per major version: the newest wins.
      const versions = safeReaddir(dir).sort((a, b) => Number(b) - Number(a));
      for (const v of versions) if (existsSync(join(dir, v, 'bin', 'initdb'))) return join(dir, v, 'bin');
    } else if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  return null;
}

/** The server the tests use: the one named by $WORKMEM_TEST_DATABASE_URL, one started here, or null. */
export async function testPostgres(): Promise<PostgresServer | null> {
  const given = process.env.WORKMEM_TEST_DATABASE_URL;
  if (given) return { url: given, stop: async () => {} };
  const bin = postgresBin();
  return bin ? startPostgres(bin) : null;
}

/** `fsync`: flush as a production server does (the concurrent bench); off by default, as tests run. */
export async function startPostgres(bin: string, options: { fsync?: boolean } = {}): Promise<PostgresServer> {
  const root = mkdtempSync(join(tmpdir(), 'workmem-pg-'));
  const asRoot = process.getuid?.() === 0;
  // initdb refuses to run as root: the cluster belongs to the postgres user then.
  const run = (tool: string, args: string[]) => {
    const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
    const result = spawnSync(command, argv as string[], { encoding: 'utf8', timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${tool} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
  };
  // The same, without blocking the event loop: a restart happens while sessions run turns.
  const runAsync = async (tool: string, args: string[]) => {
    const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
    await promisify(execFile)(command, argv as string[], { encoding: 'utf8', timeout: 60_000 });
  };
  try {
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(root, uid, gid);
    }
    const data = join(root, 'data');
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
    const port = await freePort();
    // fsync off: a test cluster thrown away at the end need not survive a power cut.
    const settings = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${root} -c fsync=${options.fsync ? 'on' : 'off'} -c max_connections=200`;
    run('pg_ctl', ['start', '-w', '-t', '60', '-D', data, '-l', join(root, 'server.log'), '-o', settings]);
    const database = `workmem_test_${randomBytes(4).toString('hex')}`;
    const admin = await import('pg');
    const client = new admin.default.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    await client.connect();
    await client.query(`CREATE DATABASE ${database}`);
    await client.end();
    return {
      url: `postgres://postgres@127.0.0.1:${port}/${database}`,
      restart: async (downMs = 0) => {
        await runAsync('pg_ctl', ['stop', '-w', '-D', data, '-m', 'fast']);
        if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
        await runAsync('pg_ctl', ['start', '-w', '-t', '60', '-D', data, '-l', join(root, 'server.log'), '-o', settings]);
      },
      stop: async () => {
        try {
          run('pg_ctl', ['stop', '-D', data, '-m', 'immediate']);
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** A port free on 127.0.0.1 right now (the kernel picks it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Whether the tests have a PostgreSQL: one named by the environment, or one they can start. */
export function postgresAvailable(): boolean {
  // The fast loop (npm run test:unit) runs the file store's half of the shared suites only.
  if (process.env.WORKMEM_TEST_POSTGRES === 'off') return false;
  return Boolean(process.env.WORKMEM_TEST_DATABASE_URL) || postgresBin() !== null;
}

/**
 * A file's PostgreSQL (`what` names its tests in errors): the run's (the global setup,
 * runPostgres.ts, names it in the environment), else one started before the file's tests
 * and stopped after them. `available` is false when there is no server to be had; the run's
 * global setup (runPostgres.ts) then says once that the Postgres tests are skipped.
 */
export function usePostgres(what: string): { available: boolean; server: () => PostgresServer } {
  const available = postgresAvailable();
  let server: PostgresServer | null = null;
  beforeAll(async () => {
    if (available) server = await testPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });
  return {
    available,
    server: () => {
      if (!server) throw new Error(`no PostgreSQL for the Postgres ${what} tests`);
      return server;
    },
  };
}

/** Run `sql` on the server's own database (to make or drop a database of a test's own). */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
