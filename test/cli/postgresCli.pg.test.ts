/**
 * The CLI's readers on sessions kept in PostgreSQL, against a real server
 * (test/storage/postgresServer.ts): `sessions show`, `memory show` and `sessions list` read
 * through the store without a lease (so while another process runs the session), `chat`
 * and `rpc` make and resume sessions there, `viz` serves their traces from the database,
 * and `--inspect` streams them live. The built CLI is spawned (run `npm run build` before
 * running this file alone). Skipped, saying so in one line, without PostgreSQL.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import WebSocket from 'ws';
import { listSessions } from '../../src/session/index.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { startVizServer } from '../../src/viz/vizServer.js';
import { cliPath, runCli } from './cliProcess.js';
import { tempHome } from '../helpers.js';
import { adminQuery, usePostgres } from '../storage/postgresServer.js';
import { auth } from '../viz/vizProbes.js';
import { HANG_MS } from '../hangGuard.js';

const { available, server: serverOf } = usePostgres('CLI reader');

const PASSWORD = 'pw-never-shown-42';

/** Run `sql` on the server's own database. */
const admin = (sql: string): Promise<void> => adminQuery(serverOf().url, sql);

/** A database of its own (the CLI uses the store's default schema), with a password in its URL (trust auth: never checked, never to be printed). */
async function withDatabase(run: (url: string, where: string) => Promise<void>): Promise<void> {
  const name = `workmem_rd_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  try {
    const url = new URL(serverOf().url);
    url.pathname = `/${name}`;
    url.username = 'postgres';
    url.password = PASSWORD;
    await run(url.toString(), `postgres://${url.host}/${name}`);
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

/** A long-running CLI process: its JSON lines (rpc) or text, and a way to wait for them. */
function spawnCli(args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [cliPath(), ...args], {
    env: { PATH: process.env.PATH, ...env },
    cwd,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  const until = async (test: (out: string) => boolean, timeoutMs = HANG_MS): Promise<void> => {
    const end = Date.now() + timeoutMs;
    while (!test(stdout)) {
      if (Date.now() > end) throw new Error(`timed out waiting on workmem ${args.join(' ')}\nstdout: ${stdout}\nstderr: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const lines = () =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { type: string; command?: string; data?: Record<string, unknown>; text?: string; status?: string });
  return { child, closed, until, lines, out: () => stdout, err: () => stderr };
}

describe.skipIf(!available)('the CLI on sessions kept in Postgres', () => {
  let model: TestServer;
  const outputs: string[] = [];
  beforeAll(async () => {
    model = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
  });
  afterAll(async () => {
    await model.close();
    for (const text of outputs) expect(text).not.toContain(PASSWORD);
  });

  const envOf = (home: string): NodeJS.ProcessEnv => ({
    WORKMEM_HOME: home,
    OPENAI_BASE_URL: model.baseURL,
    WORKMEM_MODEL: 'workmem-test',
  });
  const cli = async (args: string[], options: { env: NodeJS.ProcessEnv; cwd: string; input?: string }) => {
    const result = await runCli(args, options);
    outputs.push(result.stdout, result.stderr);
    return result;
  };

  it('sessions show, memory show and sessions list read a session while another process holds its lease; bad input is refused plainly', async () => {
    await withDatabase(async (url, where) => {
      const home = tempHome();
      const cwd = tempHome();
      const env = envOf(home);
      const holder = spawnCli(['rpc', '--database-url', url], env, cwd);
      try {
        holder.child.stdin.write('{"type":"prompt","id":1,"text":"My name is Ada."}\n');
        await holder.until(() => holder.lines().some((e) => e.type === 'turn_end'));
        const id = String(holder.lines().find((e) => e.command === 'prompt')!.data!.sessionId);
        // The rpc process still runs the session: its lease is held.
        const refused = await cli(['run', '--session', id, '--database-url', url, 'Hello?'], { env, cwd });
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toMatch(/in use by pid \d+/);

        const show = await cli(['sessions', 'show', id.slice(0, 8), '--database-url', url], { env, cwd });
        expect(show, show.stderr).toMatchObject({ code: 0 });
        expect(show.stdout).toContain(`Session ${id}`);
        expect(show.stdout).toContain(`dir:      ${where}#${cwd}/${id}`);
        expect(show.stdout).toContain('turns:    1, messages: ');
        expect(show.stdout).toContain('- name: Ada'); // the overview the model wrote
        expect(show.stdout).toContain('user: My name is Ada.');
        expect(show.stdout).toContain('assistant: Noted: your name is Ada.');

        const memory = await cli(['memory', 'show', id.slice(0, 8)], { env: { ...env, WORKMEM_DATABASE_URL: url }, cwd });
        expect(memory, memory.stderr).toMatchObject({ code: 0 });
        expect(memory.stdout).toMatch(/^# Working Memory\n[\s\S]*- name: Ada\n/);
        const newest = await cli(['memory', 'show', '--database-url', url], { env, cwd }); // the newest of this directory
        expect(newest.stdout).toBe(memory.stdout);

        const list = await cli(['sessions', 'list', '--database-url', url], { env, cwd });
        expect(list.stdout).toMatch(new RegExp(`${id.slice(0, 8)}\\s+\\S+ \\S+\\s+1\\s+\\d+\\s+phase\\d`)); // turns and messages read, not '?'

        // Still held by the rpc process, and it goes on: a second turn, then show sees it.
        holder.child.stdin.write('{"type":"prompt","id":2,"text":"What is my name?"}\n');
        await holder.until(() => holder.lines().filter((e) => e.type === 'turn_end').length === 2);
        const later = await cli(['sessions', 'show', id, '--database-url', url], { env, cwd });
        expect(later.stdout).toContain('assistant: Your name is Ada.');
        holder.child.stdin.end();
        expect(await holder.closed).toBe(0);
        expect((await listSessions({ home })).map((s) => s.id)).not.toContain(id); // nothing of it on disk

        const unknown = await cli(['sessions', 'show', 'ffffffff', '--database-url', url], { env, cwd });
        expect(unknown.code).toBe(2);
        expect(unknown.stderr).toMatch(/no session with id ffffffff in postgres:\/\//);
        const unknownMemory = await cli(['memory', 'show', 'not-an-id', '--database-url', url], { env, cwd });
        expect(unknownMemory.code).toBe(2);
        expect(unknownMemory.stderr).toMatch(/is not a session id/);
        const down = await cli(['sessions', 'show', id.slice(0, 8)], {
          env: { ...env, WORKMEM_DATABASE_URL: `postgres://someone:${PASSWORD}@127.0.0.1:1/nowhere` },
          cwd,
        });
        expect(down.code).toBe(1);
        expect(down.stderr).toMatch(/PostgreSQL at postgres:\/\/127\.0\.0\.1:1\/nowhere/);
        const vizUnknown = await cli(['viz', 'ffffffff', '--port', '0', '--database-url', url], { env, cwd });
        expect(vizUnknown.code).toBe(2);
        expect(vizUnknown.stderr).toMatch(/no session with id ffffffff in postgres:\/\//);
        const vizDown = await cli(
          ['viz', id.slice(0, 8), '--port', '0', '--database-url', `postgres://someone:${PASSWORD}@127.0.0.1:1/nowhere`],
          { env, cwd },
        );
        expect(vizDown.code).toBe(1);
        expect(vizDown.stderr).toMatch(/PostgreSQL at postgres:\/\/127\.0\.0\.1:1\/nowhere/);
        const wrong = await cli(['memory', 'show', '--database-url', `mysql://someone:${PASSWORD}@127.0.0.1/db`], { env, cwd });
        expect(wrong.code).toBe(2);
        expect(wrong.stderr).toMatch(/--database-url must be a postgres:\/\/ URL/);
      } finally {
        holder.child.kill('SIGKILL');
        outputs.push(holder.out(), holder.err());
      }
    });
  });

  it('chat makes a session in Postgres, chat --continue resumes it, memory show shows what it wrote', async () => {
    await withDatabase(async (url) => {
      const home = tempHome();
      const cwd = tempHome();
      const env = envOf(home);
      const first = await cli(['chat', '--database-url', url], { env, cwd, input: 'My dog is Rex.\n/exit\n' });
      expect(first, first.stderr).toMatchObject({ code: 0 });
      expect(first.stdout).toContain('Noted: your dog is Rex.');
      const id = /session ([0-9a-f-]{36}) \(new\)/.exec(first.stdout)![1]!;
      const again = await cli(['chat', '--continue'], {
        env: { ...env, WORKMEM_DATABASE_URL: url },
        cwd,
        input: 'What is my dog?\n/exit\n',
      });
      expect(again, again.stderr).toMatchObject({ code: 0 });
      expect(again.stdout).toContain(`session ${id} (resumed)`);
      expect(again.stdout).toContain('Your dog is Rex.');
      const memory = await cli(['memory', 'show', id, '--database-url', url], { env, cwd });
      expect(memory.stdout).toContain('- dog: Rex');
      expect((await listSessions({ home })).map((s) => s.id)).not.toContain(id);
    });
  });

  it('rpc makes a session in Postgres, rpc --session resumes it, get_memory and memory show agree', async () => {
    await withDatabase(async (url) => {
      const home = tempHome();
      const cwd = tempHome();
      const env = envOf(home);
      type Line = { type: string; command?: string; data: Record<string, unknown> };
      const parse = (stdout: string) =>
        stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Line);
      const first = await cli(['rpc', '--database-url', url], { env, cwd, input: '{"type":"prompt","text":"My name is Ada."}\n' });
      expect(first, first.stderr).toMatchObject({ code: 0 });
      const id = String(parse(first.stdout).find((e) => e.command === 'prompt')!.data.sessionId);
      const again = await cli(['rpc', '--session', id.slice(0, 8), '--database-url', url], {
        env,
        cwd,
        input: '{"type":"prompt","text":"What is my name?"}\n{"type":"get_state","id":"s"}\n',
      });
      expect(again, again.stderr).toMatchObject({ code: 0 });
      const events = parse(again.stdout);
      expect(events.find((e) => e.type === 'turn_end')).toMatchObject({
        status: 'done',
        turn: 2,
        text: expect.stringContaining('Your name is Ada.'),
      });
      const withMemory = await cli(['rpc', '--session', id, '--database-url', url], {
        env,
        cwd,
        input: '{"type":"get_memory","id":"m"}\n',
      });
      const overview = String(parse(withMemory.stdout).find((e) => e.command === 'get_memory')!.data.overview);
      expect(overview).toContain('- name: Ada');
      const memory = await cli(['memory', 'show', id, '--database-url', url], { env, cwd });
      expect(memory.stdout).toBe(`${overview.trimEnd()}\n`);
    });
  });

  it('viz --database-url lists the sessions in Postgres and serves a session’s trace from the database', async () => {
    await withDatabase(async (url) => {
      const home = tempHome();
      const cwd = tempHome();
      const env = envOf(home);
      const made = await cli(['run', '--database-url', url, 'My name is Ada.'], { env, cwd });
      const id = /session ([0-9a-f-]{36})/.exec(made.stderr)![1]!;
      await cli(['run', '--session', id, '--database-url', url, 'What is my name?'], { env, cwd });
      const viz = spawnCli(['viz', id.slice(0, 8), '--port', '0', '--database-url', url], env, cwd);
      try {
        await viz.until((out) => /http:\S+/.test(out));
        const page = new URL(/http:\S+/.exec(viz.out())![0]);
        expect(page.searchParams.get('session')).toBe(id);
        const token = /#token=(\S+)/.exec(page.hash)![1]!;
        const sessions = (await (await fetch(new URL('/api/sessions', page), { headers: auth(token) })).json()) as {
          sessions: { id: string }[];
        };
        expect(sessions.sessions.map((s) => s.id)).toEqual([id]);
        const response = await fetch(new URL(`/api/sessions/${id}/trace`, page), { headers: auth(token) });
        expect(response.status).toBe(200);
        const trace = (await response.json()) as {
          sessionId: string;
          problems: string[];
          records: { k: string; resumed?: boolean; event?: { type: string; text?: string } }[];
        };
        expect(trace.sessionId).toBe(id);
        expect(trace.problems).toEqual([]);
        expect(trace.records.filter((r) => r.k === 'header').map((r) => r.resumed)).toEqual([false, true]);
        expect(trace.records.some((r) => r.k === 'step')).toBe(true);
        expect(trace.records.flatMap((r) => (r.event?.type === 'turn_end' ? [r.event.text] : []))).toEqual([
          'Noted: your name is Ada.',
          'Your name is Ada.',
        ]);
        const missing = await fetch(new URL('/api/sessions/ffffffff/trace', page), { headers: auth(token) });
        expect(missing.status).toBe(404);
        // The context view's archive links read the session's memory from the database too.
        const db = new pg.Client({ connectionString: url });
        await db.connect();
        await db.query(
          `INSERT INTO workmem.memory_files (session_id, path, parent, kind, content) VALUES ($1, 'detail/compact-1.md', 'detail', 'file', '# Archived turns 1-2')`,
          [id],
        );
        await db.end();
        const archive = await fetch(new URL(`/api/sessions/${id}/memory-file?path=working-memory/detail/compact-1.md`, page), {
          headers: auth(token),
        });
        expect(await archive.json()).toEqual({ content: '# Archived turns 1-2' });
        const absent = await fetch(new URL(`/api/sessions/${id}/memory-file?path=detail/none.md`, page), { headers: auth(token) });
        expect(absent.status).toBe(404);
        viz.child.kill('SIGINT');
        expect(await viz.closed).toBe(0);
      } finally {
        viz.child.kill('SIGKILL');
        outputs.push(viz.out(), viz.err());
      }
    });
  });

  it('rpc --inspect-port on Postgres streams live to a viz of the same database, which then replays it from the trace table', async () => {
    await withDatabase(async (url) => {
      const home = tempHome();
      const store = postgresStore({ connectionString: url });
      const viz = await startVizServer({ home, store });
      const page = new WebSocket(`ws://127.0.0.1:${viz.port}/live`, ['workmem', `token.${viz.token}`]);
      const seen: { type: string; sessionId?: string; record?: { k: string; event?: { type: string } } }[] = [];
      page.on('message', (data) => seen.push(JSON.parse(String(data))));
      try {
        await new Promise((resolve) => page.once('open', resolve));
        const result = await cli(['rpc', '--inspect-port', String(viz.port), '--database-url', url], {
          env: envOf(home),
          cwd: tempHome(),
          input: '{"type":"prompt","text":"Hello, visualizer."}\n',
        });
        expect(result, result.stderr).toMatchObject({ code: 0 });
        await new Promise((resolve) => setTimeout(resolve, 200));
        const live = seen.filter((m) => m.type === 'record');
        expect(live.some((m) => m.record?.event?.type === 'turn_end')).toBe(true);
        const id = live[0]!.sessionId!;
        const trace = (await (await fetch(`${viz.url}/api/sessions/${id}/trace`, { headers: auth(viz.token) })).json()) as {
          records: { k: string }[];
        };
        // The database kept what went live, record for record, after the header written before the link was up.
        const kinds = live.filter((m) => m.sessionId === id).map((m) => m.record!.k);
        expect(trace.records[0]!.k).toBe('header');
        expect(trace.records.slice(-kinds.length).map((r) => r.k)).toEqual(kinds);
        expect(trace.records.length - kinds.length).toBeLessThanOrEqual(1);
      } finally {
        page.close();
        await viz.close();
        await store.close();
      }
    });
  });
});
