import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Keyv from 'keyv';
import KeyvSqlite from '@keyv/sqlite';
import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { findSession, listSessions, openSession, removeSession } from '../../src/session/index.js';
import { keyvStateStore } from '../../src/storage/keyvStateStore.js';
import { collect, newSession, ofType, tempHome } from '../helpers.js';

const REMEMBER = { toolCalls: [{ name: 'remember', arguments: { content: 'The user keeps bees in Lyon.', importance: 0.7 } }] };
const RECALL = { toolCalls: [{ name: 'recall', arguments: { query: 'bees' } }] };

/** Every path under `dir`, relative. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

describe('the default store: files, no native addon', () => {
  it('createSession, listSessions and item memory work; the home holds no workmem.sqlite', async () => {
    const home = tempHome();
    const session = await newSession({ llm: scriptedModel([REMEMBER, { text: 'Noted.' }]), home, name: 'bees', itemMemory: {} });
    await session.prompt('I keep bees.');
    await session.close();
    const listed = await listSessions({ home });
    expect(listed).toMatchObject([{ id: session.id, dir: session.dir, name: 'bees' }]);
    expect(await findSession(session.id.slice(0, 8), { home })).toBe(session.dir);

    const again = await openSession(session.id, { llm: scriptedModel([RECALL, { text: 'Bees.' }]), home, env: {}, itemMemory: {} });
    const events = collect(again);
    await again.prompt('What do I keep?');
    expect(ofType(events, 'tool_end')[0]!.content).toMatch(/The user keeps bees in Lyon\./);
    await again.close();

    expect(tree(home).filter((p) => /sqlite/.test(p))).toEqual([]);
    expect(tree(join(home, 'state')).some((p) => p.startsWith('items%3Asession%3A'))).toBe(true);
    await removeSession(session.id, { home });
    expect(await listSessions({ home })).toEqual([]);
    expect(tree(join(home, 'state')).filter((p) => p !== '.tmp')).toEqual([]);
  });

  it('listSessions also finds sessions on disk that the index does not know (a home from an earlier version)', async () => {
    const home = tempHome();
    const a = await newSession({ llm: scriptedModel([]), home, name: 'kept' });
    await a.close();
    const b = await newSession({ llm: scriptedModel([]), home, cwd: '/work/other' });
    await b.close();
    // The index as an earlier version left it: in workmem.sqlite, which this version does not read.
    rmSync(join(home, 'state'), { recursive: true });
    writeFileSync(join(home, 'workmem.sqlite'), '');
    const listed = await listSessions({ home });
    expect(listed.map((e) => e.id).sort()).toEqual([a.id, b.id].sort());
    expect(listed.find((e) => e.id === a.id)).toMatchObject({ dir: a.dir, cwd: '/work/project', name: 'kept' });
    expect((await listSessions({ home, cwd: '/work/other' })).map((e) => e.id)).toEqual([b.id]);
    // A folder that is not a session (no meta.json, or a broken one) is not listed and does not fail the list.
    mkdirSync(join(home, 'sessions', '--work-project--', '00000000-0000-4000-8000-000000000000'));
    expect((await listSessions({ home })).length).toBe(2);
  });
});

describe('any keyv instance instead', () => {
  it('@keyv/sqlite: the tracker, the index and the items survive a reopen through it', async () => {
    const home = tempHome();
    const uri = `sqlite://${join(home, 'mine.sqlite')}`;
    const keyv = new Keyv({ store: new KeyvSqlite(uri), namespace: 'workmem' });
    const session = await newSession({ llm: scriptedModel([REMEMBER, { text: 'Noted.' }]), home, itemMemory: {}, stateStore: keyv });
    await session.prompt('I keep bees.');
    const tracker = session.state.tracker;
    await session.close();
    await keyv.disconnect();

    const reopened = new Keyv({ store: new KeyvSqlite(uri), namespace: 'workmem' });
    expect(await reopened.get(`session:${session.id}`)).toMatchObject({ id: session.id, dir: session.dir });
    expect(await reopened.get(`tracker:${session.id}`)).toEqual(tracker);
    expect(await listSessions({ home, stateStore: reopened })).toMatchObject([{ id: session.id }]);
    const again = await openSession(session.id.slice(0, 6), {
      llm: scriptedModel([RECALL, { text: 'Bees.' }]),
      home,
      env: {},
      itemMemory: {},
      stateStore: reopened,
    });
    const events = collect(again);
    expect(again.state.tracker).toEqual(tracker);
    await again.prompt('What do I keep?');
    expect(ofType(events, 'tool_end')[0]!.content).toMatch(/The user keeps bees in Lyon\./);
    await again.close();
    await removeSession(session.id, { home, stateStore: reopened });
    expect(await reopened.get(`session:${session.id}`)).toBeUndefined();
    await reopened.disconnect();
    // Nothing went to the file store.
    expect(existsSync(join(home, 'state'))).toBe(false);
  });

  it('an adapter that cannot list keys gets a clear error naming what is missing', async () => {
    const map = new Map<string, unknown>();
    const adapter = {
      opts: {},
      get: async (key: string) => map.get(key),
      set: async (key: string, value: unknown) => void map.set(key, value),
      delete: async (key: string) => map.delete(key),
      clear: async () => map.clear(),
      on: () => adapter,
    };
    const keyv = new Keyv({ store: adapter });
    const store = keyvStateStore(keyv);
    await store.set('session:x', { id: 'x' });
    expect(await store.get('session:x')).toEqual({ id: 'x' });
    await expect(store.entries('session:')).rejects.toThrow(/keyv\.iterator/);
  });

  it('something else given as stateStore is named, before anything is written', async () => {
    const home = tempHome();
    await expect(newSession({ llm: scriptedModel([]), home, stateStore: 'sqlite://x' as never })).rejects.toThrow(
      /options\.stateStore must be a keyv instance/,
    );
    expect(readdirSync(home)).toEqual([]);
  });

  it('a write the adapter refuses is an error, not a silent false', async () => {
    const keyv = new Keyv();
    keyv.set = async () => false;
    await expect(keyvStateStore(keyv).set('session:x', 1)).rejects.toThrow(/could not store session:x/);
  });
});

describe('importing the package', () => {
  it('loads no native addon, through a whole prompt', () => {
    const dist = join(import.meta.dirname, '..', '..', 'dist', 'src');
    expect(existsSync(join(dist, 'index.js')), 'build first: npx tsc -p tsconfig.json').toBe(true);
    const home = tempHome();
    const script = `
      import { createRequire } from 'node:module';
      const { createSession } = await import(${JSON.stringify(join(dist, 'index.js'))});
      const { startTestServer, scripted } = await import(${JSON.stringify(join(dist, 'testing', 'index.js'))});
      const { openaiChat } = await import(${JSON.stringify(join(dist, 'index.js'))});
      const server = await startTestServer({ policy: scripted(['Hello.']) });
      const session = await createSession({
        llm: openaiChat({ baseURL: server.baseURL, apiKey: 'k', model: 'gpt-4o', env: {} }),
        home: ${JSON.stringify(home)}, cwd: '/w', env: {},
      });
      const result = await session.prompt('Hi');
      await session.close();
      await server.close();
      const native = process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node'));
      const cjs = Object.keys(createRequire(import.meta.url).cache).filter((f) => /sqlite/.test(f));
      console.log(JSON.stringify({ status: result.status, native, cjs }));
    `;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    expect(out).toEqual({ status: 'done', native: [], cjs: [] });
  });
});

describe('the sanity of the check above', () => {
  it('process.report does list a native addon once one is loaded', () => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const script = `
      await import('@keyv/sqlite');
      const native = process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node'));
      console.log(JSON.stringify(native.map((f) => f.split('/').pop())));
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env,
      encoding: 'utf8',
      cwd: join(import.meta.dirname, '..', '..'),
      timeout: 60_000,
    });
    expect(JSON.parse(run.stdout.trim())).toEqual(['node_sqlite3.node']);
  });
});
