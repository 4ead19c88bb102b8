/**
 * The contract of the storage port (src/storage/sessionStore.ts): every session store
 * must pass these. A store's test file calls `sessionStoreContract(name, backend)`;
 * `backend.connect()` gives a new store instance over the same backend each call, as a
 * second process or machine would have.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

export { metaFor };
import { metaFor } from './sessionMetaFixture.js';
import type { SessionStorage, SessionStore } from '../../src/storage/sessionStore.js';
import { PathRefusedError } from '../../src/storage/sandboxPath.js';
import { LeaseLostError, SequenceConflictError, SessionInUseError, SessionNotFoundError } from '../../src/storage/storeErrors.js';

export interface StoreBackend {
  /** A new store instance over this backend (another process would have its own). */
  connect(): Promise<SessionStore>;
  /** Remove the backend and everything in it. */
  destroy(): Promise<void>;
  /**
   * A store instance whose leases last `leaseMs` and are never renewed on their own, as
   * a paused or partitioned process's would not be: for the fencing test.
   */
  connectPaused?(leaseMs: number): Promise<SessionStore>;
}

export interface ContractOptions {
  /** Why this store has no fence on its writes: the fencing clause does not bind it (no test declared, none skipped). */
  noFencing?: string;
}

const user = (text: string) => ({ type: 'message' as const, turn: 1, tokens: 1, message: { role: 'user' as const, content: text } });

export function sessionStoreContract(name: string, makeBackend: () => Promise<StoreBackend>, options: ContractOptions = {}): void {
  describe(`session store contract: ${name}`, () => {
    let backend: StoreBackend;
    let store: SessionStore;
    const open: SessionStorage[] = [];
    const stores: SessionStore[] = [];

    beforeEach(async () => {
      backend = await makeBackend();
      store = await connect();
    });
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close().catch(() => {});
      for (const s of stores.splice(0)) await s.close();
      await backend.destroy();
    });

    async function connect(): Promise<SessionStore> {
      const s = await backend.connect();
      stores.push(s);
      return s;
    }
    async function created(id = randomUUID(), cwd?: string, at?: number): Promise<SessionStorage> {
      let tick = 1_000;
      const s = await store.create({ meta: metaFor(id, cwd, at), now: () => tick++ });
      open.push(s);
      return s;
    }
    async function reopened(s: SessionStorage): Promise<SessionStorage> {
      await s.close();
      const again = await store.open(s.id);
      open.push(again);
      return again;
    }

    it('reads entries back in the order they were appended, numbered from 1, across a reopen', async () => {
      const s = await created();
      expect(s.log.nextSeq).toBe(1);
      const first = await s.log.append(user('one'), { expectedSeq: 1, sync: true });
      const second = await s.log.append({ type: 'event', turn: 1, name: 'note', data: { n: 2 } }, { expectedSeq: 2, sync: false });
      await s.log.append(user('three'), { expectedSeq: 3, sync: false });
      expect([first.seq, second.seq]).toEqual([1, 2]);
      expect(first.ts).toBe(1_000);
      const again = await reopened(s);
      const read = await again.log.read();
      expect(read.damage).toEqual([]);
      expect(read.entries.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(read.entries[0]).toEqual(first);
      expect(read.entries[1]).toMatchObject({ type: 'event', name: 'note', data: { n: 2 } });
      expect(again.log.nextSeq).toBe(4);
    });

    it('refuses an append whose expected sequence number is not the next, and writes nothing', async () => {
      const s = await created();
      await s.log.append(user('one'), { expectedSeq: 1, sync: true });
      for (const wrong of [1, 3, 0]) {
        const refused = await s.log.append(user(`stale ${wrong}`), { expectedSeq: wrong, sync: true }).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(SequenceConflictError);
        expect((refused as SequenceConflictError).nextSeq).toBe(2);
      }
      expect(s.log.nextSeq).toBe(2);
      expect((await s.log.read()).entries.map((e) => e.seq)).toEqual([1]);
      await s.log.append(user('two'), { expectedSeq: 2, sync: true });
      const again = await reopened(s);
      expect((await again.log.read()).entries.map((e) => (e.type === 'message' ? e.message.content : null))).toEqual(['one', 'two']);
    });

    it('commits archive files and their entry as one: both there after a reopen, the entry next in the log', async () => {
      const s = await created();
      await s.log.append(user('one'), { expectedSeq: 1, sync: true });
      await s.memory.write('archive/a.md', '# first part');
      const entry = await s.commit(
        [
          { path: 'detail/compact-1.md', content: '# Archived turns 1-2', append: false },
          { path: 'working-memory/archive/a.md', content: 'second part', append: true },
        ],
        { type: 'event', turn: 2, name: 'compacted', data: { files: 2 } },
        { expectedSeq: 2 },
      );
      expect(entry).toMatchObject({ seq: 2, name: 'compacted' });
      expect(s.log.nextSeq).toBe(3);
      const again = await reopened(s);
      expect((await again.log.read()).entries.map((e) => e.seq)).toEqual([1, 2]);
      expect(await again.memory.read('detail/compact-1.md', { maxBytes: 100 })).toBe('# Archived turns 1-2');
      expect(await again.memory.read('archive/a.md', { maxBytes: 100 })).toBe('# first part\n\n---\n\nsecond part');
    });

    it('a refused commit writes neither its files nor its entry: a stale seq, a path that leaves working-memory/, a folder in the way', async () => {
      const s = await created();
      await s.log.append(user('one'), { expectedSeq: 1, sync: true });
      const file = { path: 'detail/c.md', content: 'archive', append: false };
      const event = { type: 'event' as const, turn: 1, name: 'compacted', data: {} };
      await expect(s.commit([file], event, { expectedSeq: 1 })).rejects.toBeInstanceOf(SequenceConflictError);
      await expect(s.commit([{ ...file, path: '../outside.md' }], event, { expectedSeq: 2 })).rejects.toBeInstanceOf(PathRefusedError);
      await expect(s.commit([{ ...file, path: 'detail' }], event, { expectedSeq: 2 })).rejects.toBeInstanceOf(PathRefusedError);
      expect(s.log.nextSeq).toBe(2);
      expect(await s.memory.exists('detail/c.md')).toBe(false);
      const again = await reopened(s);
      expect((await again.log.read()).entries.map((e) => e.seq)).toEqual([1]);
      expect(await again.memory.exists('detail/c.md')).toBe(false);
    });

    it('round-trips the meta, across a reopen', async () => {
      const s = await created();
      const read = await s.readMeta();
      expect(read).toEqual({ ok: true, meta: metaFor(s.id) });
      const changed = { ...metaFor(s.id), title: 'Plan the trip', messageCount: 3, historyMode: 'hybrid' as const };
      await s.writeMeta(changed, { durable: false });
      expect(await (await reopened(s)).readMeta()).toEqual({ ok: true, meta: changed });
    });

    it('writes memory files whole and reads them back; folders are made on the way and listed', async () => {
      const s = await created();
      expect(await s.memory.write('detail/plan.md', '# Plan\n\none')).toEqual({ created: true });
      expect(await s.memory.write('working-memory/detail/plan.md', '# Plan\n\ntwo')).toEqual({ created: false });
      expect(await s.memory.read('detail/plan.md', { maxBytes: 1024 })).toBe('# Plan\n\ntwo');
      expect(await s.memory.exists('detail/plan.md')).toBe(true);
      expect(await s.memory.exists('detail/none.md')).toBe(false);
      const listed = await s.memory.list('detail');
      expect(listed.map((e) => [e.path, e.kind, e.bytes])).toEqual([['detail/plan.md', 'file', 11]]);
      const before = (await s.memory.stat('detail/plan.md'))!.version;
      await s.memory.write('detail/plan.md', '# Plan\n\nthree, longer');
      expect((await s.memory.stat('detail/plan.md'))!.version).not.toBe(before);
      expect(await s.memory.stat('detail/none.md')).toBeNull();
      // Several at once, where the store offers it: what stat gives for each, in the order asked.
      if (s.memory.statAll) {
        const paths = ['detail/none.md', 'working-memory/detail/plan.md', 'detail'];
        expect(await s.memory.statAll(paths)).toEqual(await Promise.all(paths.map((p) => s.memory.stat(p))));
      }
    });

    it('appends sections to a memory file', async () => {
      const s = await created();
      expect(await s.memory.append('archive/log.md', '# First')).toEqual({ created: true, bytes: 7 });
      const second = await s.memory.append('archive/log.md', '# Second');
      expect(second.created).toBe(false);
      const text = await s.memory.read('archive/log.md', { maxBytes: 1024 });
      expect(text).toBe('# First\n\n---\n\n# Second');
      expect(second.bytes).toBe(Buffer.byteLength(text));
    });

    it('reads with a byte limit: refused beyond it, or only the head when asked', async () => {
      const s = await created();
      await s.memory.write('detail/big.md', '# Heading\n' + 'x'.repeat(5000));
      await expect(s.memory.read('detail/big.md', { maxBytes: 100 })).rejects.toThrow(PathRefusedError);
      expect(await s.memory.read('detail/big.md', { maxBytes: 9, head: true })).toBe('# Heading');
      await expect(s.memory.read('detail/missing.md', { maxBytes: 100 })).rejects.toThrow(/not found/);
    });

    it('confines memory paths: `..`, absolute paths and the folder itself are refused, nothing written', async () => {
      const s = await created();
      for (const bad of ['../meta.json', 'detail/../../escape.md', '/etc/passwd', 'working-memory', '']) {
        await expect(s.memory.write(bad, 'x'), bad).rejects.toThrow(PathRefusedError);
        await expect(s.memory.read(bad, { maxBytes: 10 }), bad).rejects.toThrow(PathRefusedError);
      }
      await expect(s.memory.append('../x.md', 'x')).rejects.toThrow(PathRefusedError);
      expect(await (await s.readMeta()).ok).toBe(true);
      expect((await s.memory.list('.')).map((e) => e.path).filter((p) => p.includes('escape'))).toEqual([]);
    });

    it('a second open of a held session fails with SessionInUseError naming the holder; release lets it open', async () => {
      const s = await created();
      const other = await connect();
      const refused = await other.open(s.id).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SessionInUseError);
      const holder = (refused as SessionInUseError).holder;
      expect(holder).toBeTruthy();
      expect((refused as Error).message).toContain(holder!);
      expect(s.lease.holder).toContain(holder!);
      await s.lease.renew();
      await s.lease.release();
      const taken = await other.open(s.id);
      open.push(taken);
      expect(taken.lease.token).not.toBe('');
      await expect(store.open(s.id)).rejects.toThrow(SessionInUseError);
      await taken.close();
      open.push(await store.open(s.id)); // close releases too
    });

    it('lists sessions newest first, by cwd, and finds one by its id or a unique prefix', async () => {
      const a = await created('aaaa1111-0000-4000-8000-000000000001', '/one', 1);
      const b = await created('aaaa2222-0000-4000-8000-000000000002', '/two', 2);
      expect((await store.list()).map((e) => e.id)).toEqual([b.id, a.id]);
      expect((await store.list({ cwd: '/one' })).map((e) => e.id)).toEqual([a.id]);
      expect(await store.find('aaaa2')).toMatchObject({ id: b.id, cwd: '/two', createdAt: 2, location: b.location });
      expect((await store.find(a.id)).id).toBe(a.id);
      await expect(store.find('aaaa')).rejects.toThrow(SessionNotFoundError); // ambiguous
      await expect(store.find('bbbb')).rejects.toThrow(SessionNotFoundError);
      await expect(store.create({ meta: metaFor(a.id) })).rejects.toThrow();
    });

    it('a removed session is gone; one in use is not removed', async () => {
      const s = await created();
      await s.log.append(user('one'), { expectedSeq: 1, sync: true });
      await expect((await connect()).remove(s.id)).rejects.toThrow(SessionInUseError);
      expect((await store.find(s.id)).id).toBe(s.id);
      await s.close();
      await store.remove(s.id);
      expect((await store.list()).map((e) => e.id)).not.toContain(s.id);
      await expect(store.find(s.id)).rejects.toThrow(SessionNotFoundError);
      await expect(store.open(s.id)).rejects.toThrow(SessionNotFoundError);
    });

    it('two instances racing to open one session: exactly one wins, the other is told who holds it', async () => {
      const s = await created();
      await s.close();
      const [a, b] = [await connect(), await connect()];
      const results = await Promise.allSettled([a.open(s.id), b.open(s.id)]);
      const won = results.filter((r) => r.status === 'fulfilled');
      for (const r of won) open.push(r.value);
      expect(won).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected');
      expect(lost?.reason).toBeInstanceOf(SessionInUseError);
    });

    it('reads a session without its lease while another instance holds it: meta, log, memory files and trace', async () => {
      const s = await created();
      await s.log.append(user('one'), { expectedSeq: 1, sync: true });
      await s.memory.write('overview.md', '# Overview\n');
      await s.memory.write('detail/design.md', '# Design\nbody\n');
      s.trace.write(['{"k":"header","n":1}\n', '{"k":"event","n":2}\n']);
      await s.trace.flush();
      const other = await connect(); // another instance: the lease is s's
      const reader = await other.read(s.id);
      expect(reader.id).toBe(s.id);
      expect(reader.location).toBe(s.location);
      expect(await reader.readMeta()).toEqual({ ok: true, meta: metaFor(s.id) });
      const log = await reader.readLog();
      expect(log.damage).toEqual([]);
      expect(log.entries.map((e) => (e.type === 'message' ? e.message.content : null))).toEqual(['one']);
      expect(await reader.memory.read('overview.md', { maxBytes: 100 })).toBe('# Overview\n');
      expect(await reader.memory.read('working-memory/detail/design.md', { maxBytes: 8, head: true })).toBe('# Design');
      expect((await reader.memory.list('detail')).map((e) => [e.path, e.kind, e.bytes])).toEqual([['detail/design.md', 'file', 14]]);
      expect(await reader.memory.stat('detail/nothing.md')).toBeNull();
      expect(await reader.memory.exists('overview.md')).toBe(true);
      await expect(reader.memory.read('../meta.json', { maxBytes: 100 })).rejects.toThrow(PathRefusedError);
      expect((await reader.readTrace()).map((r) => JSON.parse(r))).toEqual([
        { k: 'header', n: 1 },
        { k: 'event', n: 2 },
      ]);
      // The writer goes on, and the reader sees it; the lease stayed with the writer all along.
      await s.log.append(user('two'), { expectedSeq: 2, sync: true });
      expect((await reader.readLog()).entries).toHaveLength(2);
      await expect(other.open(s.id)).rejects.toThrow(SessionInUseError);
      await expect(other.read(randomUUID())).rejects.toThrow(SessionNotFoundError);
      await expect(other.read('not-an-id')).rejects.toThrow(SessionNotFoundError);
    });

    it('keeps the trace in order across a reopen; a session never traced reads as an empty trace', async () => {
      const s = await created();
      expect(await (await store.read(s.id)).readTrace()).toEqual([]);
      const lines = Array.from({ length: 1_500 }, (_, i) => `{"n":${i}}\n`);
      s.trace.write(lines.slice(0, 700));
      s.trace.write(lines.slice(700, 1_400));
      const again = await reopened(s); // closing stores what was queued
      again.trace.write(lines.slice(1_400));
      await again.trace.flush();
      expect(again.trace.dropped).toBe(0);
      expect((await (await store.read(s.id)).readTrace()).map((r) => JSON.parse(r).n)).toEqual(lines.map((_, i) => i));
    });

    // A clause of the stores that fence their writes. One that does not is exempt, with its reason, not skipped
    // (ContractOptions.noFencing): the filesystem store's lock and its takeover are tried across processes by the
    // reliability matrix (test/reliability/lock.ts), where a holder really is another process.
    const fencing = `a holder whose lease expired and was taken over is fenced: its late writes are refused, nothing of it interleaved`;
    const clause = options.noFencing ? (): void => {} : it;
    clause(fencing, async () => {
      if (!backend.connectPaused) throw new Error(`the ${name} backend has no connectPaused(): give one, or a noFencing reason`);
      const paused = await backend.connectPaused(400);
      stores.push(paused);
      const a = await paused.create({ meta: metaFor(randomUUID()) });
      open.push(a);
      await a.log.append(user('a1'), { expectedSeq: 1, sync: true });
      await a.memory.write('overview.md', '# by A');
      const refused = (await store.open(a.id).catch((e: unknown) => e)) as SessionInUseError;
      expect(refused).toBeInstanceOf(SessionInUseError);
      expect(refused.until).toEqual(expect.any(Number));
      expect(refused.message).toContain(new Date(refused.until!).toISOString());
      // A is paused past its lease: B takes the session over with a newer token.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, refused.until! - Date.now()) + 100));
      const b = await store.open(a.id);
      open.push(b);
      expect(BigInt(b.lease.token)).toBeGreaterThan(BigInt(a.lease.token));
      expect(b.log.nextSeq).toBe(2);
      // A comes back and writes as if nothing happened — seq 2 is still next — and every write is refused.
      await expect(a.log.append(user('a2'), { expectedSeq: 2, sync: true })).rejects.toThrow(LeaseLostError);
      await expect(a.memory.write('overview.md', '# late A')).rejects.toThrow(LeaseLostError);
      await expect(a.memory.append('archive/a.md', 'late')).rejects.toThrow(LeaseLostError);
      const lateArchive = [{ path: 'detail/late.md', content: 'late', append: false }];
      await expect(a.commit(lateArchive, user('late compaction'), { expectedSeq: 2 })).rejects.toThrow(LeaseLostError);
      await expect(a.writeMeta({ ...metaFor(a.id), title: 'late A' })).rejects.toThrow(LeaseLostError);
      await expect(a.writeDamage({ checkedAt: 1, lines: [], repairs: [] })).rejects.toThrow(LeaseLostError);
      await expect(a.lease.renew()).rejects.toThrow(LeaseLostError);
      a.trace.write(['{"late":"A"}\n']); // never thrown: the trace is diagnostic, and fenced like the rest
      await a.trace.flush();
      expect(a.trace.dropped).toBe(1);
      expect(await (await store.read(a.id)).readTrace()).toEqual([]);
      await a.close(); // releasing a lost lease leaves the new holder's alone
      await b.log.append(user('b2'), { expectedSeq: 2, sync: true });
      const read = await b.log.read();
      expect(read.entries.map((e) => (e.type === 'message' ? e.message.content : null))).toEqual(['a1', 'b2']);
      expect(await b.memory.read('overview.md', { maxBytes: 100 })).toBe('# by A');
      expect(await b.memory.exists('archive/a.md')).toBe(false);
      expect(await b.memory.exists('detail/late.md')).toBe(false);
      expect(await b.readMeta()).toEqual({ ok: true, meta: metaFor(a.id) });
      await expect(connect().then((c) => c.open(a.id))).rejects.toThrow(SessionInUseError);
    });
  });
}
