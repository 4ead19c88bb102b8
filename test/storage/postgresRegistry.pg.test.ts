/**
 * Sessions in Postgres as the registry and the CLI see them, against a real PostgreSQL
 * (test/storage/postgresServer.ts): listSessions / findSession / removeSession given a
 * store, and `workmem run|sessions --database-url` (the built CLI: run `npm run build`
 * before running this file alone). Skipped, saying so in one line, without PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { findSession, listSessions, openSession, removeSession } from '../../src/session/index.js';
import { openStateStore } from '../../src/storage/openStateStore.js';
import { stateStorePath } from '../../src/storage/sessionPaths.js';
import { TRACKER_KEY } from '../../src/session/options.js';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { runCli as cli } from '../cli/cliProcess.js';
import { collect, newSession, ofType, tempHome } from '../helpers.js';
import { adminQuery, usePostgres } from './postgresServer.js';

const { available, server: serverOf } = usePostgres('registry and CLI');

/** Run `sql` on the server's own database. */
const admin = (sql: string): Promise<void> => adminQuery(serverOf().url, sql);

/** A database of its own (the CLI uses the store's default schema), dropped at the end. */
async function withDatabase(run: (url: URL) => Promise<void>): Promise<void> {
  const name = `workmem_cli_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  try {
    const url = new URL(serverOf().url);
    url.pathname = `/${name}`;
    await run(url);
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

describe.skipIf(!available)('sessions in Postgres, through the registry and the CLI', () => {
  it('the tracker and item memories live in the database: another instance, with a home of its own, carries on from them', async () => {
    await withDatabase(async (url) => {
      const [homeA, homeB] = [tempHome(), tempHome()];
      const [a, b] = [postgresStore({ connectionString: url.toString() }), postgresStore({ connectionString: url.toString() })];
      try {
        const remember = { toolCalls: [{ name: 'remember', arguments: { content: 'The user keeps bees in Lyon.', importance: 0.7 } }] };
        const first = await newSession({
          llm: scriptedModel([remember, { text: 'Noted.' }]),
          home: homeA,
          store: a,
          itemMemory: {},
          env: {},
        });
        await first.prompt('I keep bees.');
        const tracker = first.state.tracker;
        expect(tracker.rounds).toBeGreaterThan(0);
        await first.close();

        const recall = { toolCalls: [{ name: 'recall', arguments: { query: 'bees' } }] };
        const llm = scriptedModel([recall, { text: 'Bees.' }]);
        const again = await openSession(first.id, { llm, home: homeB, store: b, itemMemory: {}, env: {} });
        expect(again.state.tracker).toEqual(tracker);
        const events = collect(again);
        await again.prompt('What do I keep?');
        expect(ofType(events, 'tool_end')[0]!.content).toMatch(/The user keeps bees in Lyon\./);
        await again.close();
        // Neither home holds state for it: a session in the database leaves nothing on the machine that served it.
        for (const home of [homeA, homeB]) expect(existsSync(join(home, 'state'))).toBe(false);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });

  it('listSessions, findSession and removeSession work on the store given; the home lists its own sessions only', async () => {
    await withDatabase(async (url) => {
      const home = tempHome();
      const store = postgresStore({ connectionString: url.toString() });
      try {
        const llm = () => scriptedModel(() => ({ text: 'ok' }));
        const onFile = await newSession({ llm: llm(), home, trace: false, env: {} });
        await onFile.close();
        const inDb = await newSession({ llm: llm(), home, store, trace: false, env: {} });
        await inDb.prompt('hello');
        const dbLocation = inDb.dir;
        await inDb.close();

        expect((await listSessions({ home })).map((s) => s.id)).toEqual([onFile.id]);
        const listed = await listSessions({ home, store });
        expect(listed.map((s) => [s.id, s.dir, s.cwd])).toEqual([[inDb.id, dbLocation, '/work/project']]);
        expect(await listSessions({ home, store, cwd: '/elsewhere' })).toEqual([]);
        expect(await findSession(inDb.id.slice(0, 8), { home, store })).toBe(dbLocation);
        await expect(findSession(onFile.id, { home, store })).rejects.toThrow(/no session with id/);

        // Its tracker is in the database, not in the home.
        const state = await openStateStore(stateStorePath(home), undefined, store);
        expect(await state.get(TRACKER_KEY(inDb.id))).toBeDefined();
        const homeState = await openStateStore(stateStorePath(home));
        expect(await homeState.get(TRACKER_KEY(inDb.id))).toBeUndefined();
        await homeState.close();
        expect(await removeSession(inDb.id.slice(0, 8), { home, store })).toBe(dbLocation);
        expect(await store.list()).toEqual([]);
        expect(await state.get(TRACKER_KEY(inDb.id))).toBeUndefined(); // what the database kept for it goes too
        expect((await listSessions({ home })).map((s) => s.id)).toEqual([onFile.id]);
      } finally {
        await store.close();
      }
    });
  });

  describe('the CLI with --database-url / WORKMEM_DATABASE_URL', () => {
    let model: TestServer;
    beforeAll(async () => {
      model = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
    });
    afterAll(async () => model.close());

    it('run keeps the session in Postgres; sessions list shows it (round 3 #2: the URL from --database-url-file too), rm removes it; the password is never printed', async () => {
      await withDatabase(async (url) => {
        url.username = 'postgres';
        url.password = 'pw-never-shown-42'; // trust auth: accepted, never checked, and must not be printed
        const databaseUrl = url.toString();
        const home = tempHome();
        const cwd = tempHome();
        const env = { WORKMEM_HOME: home, OPENAI_BASE_URL: model.baseURL, WORKMEM_MODEL: 'workmem-test' };
        const outputs: string[] = [];
        const run = async (args: string[], extraEnv: NodeJS.ProcessEnv = {}) => {
          const result = await cli(args, { env: { ...env, ...extraEnv }, cwd });
          outputs.push(result.stdout, result.stderr);
          return result;
        };

        const first = await run(['run', '--database-url', databaseUrl, 'My name is Ada.']);
        expect(first, first.stderr).toMatchObject({ code: 0 });
        expect(first.stdout).toContain('Noted: your name is Ada.');
        const id = /session ([0-9a-f-]{36})/.exec(first.stderr)![1]!;
        // Not on disk: the home has no session of it.
        expect((await listSessions({ home })).map((s) => s.id)).not.toContain(id);
        // The environment says the same; --continue finds the session in Postgres.
        const again = await run(['run', '--continue', 'What is my name?'], { WORKMEM_DATABASE_URL: databaseUrl });
        expect(again.stdout).toContain('Your name is Ada.');
        expect(again.stderr).toContain(`session ${id}`);

        const list = await run(['sessions', 'list', '--database-url', databaseUrl]);
        expect(list.code).toBe(0);
        expect(list.stdout).toContain(id.slice(0, 8));
        // round 3 #2: the URL from a file, off the command line: the same sessions, and no warning.
        const urlFile = join(tempHome(), 'database-url');
        writeFileSync(urlFile, `${databaseUrl}\n`, { mode: 0o600 });
        const fromFile = await run(['sessions', 'list', '--database-url-file', urlFile]);
        expect(fromFile.stdout).toContain(id.slice(0, 8));
        expect(fromFile.stderr).toBe('');
        expect(list.stderr).toContain('--database-url puts the password on the command line');
        const fileList = await run(['sessions', 'list']);
        expect(fileList.stdout).not.toContain(id.slice(0, 8));
        // The flag beats the environment: a database that is not there is not asked.
        const flagWins = await run(['sessions', 'list', '--all', '--database-url', databaseUrl], {
          WORKMEM_DATABASE_URL: 'postgres://someone:env-secret-7@127.0.0.1:1/nowhere',
        });
        expect(flagWins.stdout).toContain(id.slice(0, 8));

        const show = await run(['sessions', 'show', id.slice(0, 8), '--database-url', databaseUrl]);
        expect(show.code).toBe(0);
        expect(show.stdout).toContain(`Session ${id}`);

        const rm = await run(['sessions', 'rm', id.slice(0, 8), '--database-url', databaseUrl]);
        expect(rm.code).toBe(0);
        expect(rm.stdout).toContain(`Removed postgres://127.0.0.1:${url.port}${url.pathname}`);
        const empty = await run(['sessions', 'list', '--all'], { WORKMEM_DATABASE_URL: databaseUrl });
        expect(empty.stdout).toBe('No sessions yet.\n');

        const down = await run(['sessions', 'list'], { WORKMEM_DATABASE_URL: 'postgres://someone:env-secret-7@127.0.0.1:1/nowhere' });
        expect(down.code).toBe(1);
        expect(down.stderr).toMatch(/PostgreSQL at postgres:\/\/127\.0\.0\.1:1\/nowhere/);

        for (const text of outputs) {
          expect(text).not.toContain('pw-never-shown-42');
          expect(text).not.toContain('env-secret-7');
        }
      });
    });
  });
});
