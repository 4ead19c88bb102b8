/**
 * SessionRecord over the filesystem store does what SessionFiles does: the same bytes on
 * disk for the same calls, the same derived history, meta rebuilt and healed from the
 * log, damage reported, tracker facts, one writer.
 */
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionRecord } from '../src/history/sessionRecord.js';
import { fileSessionStore } from '../src/storage/fileSessionStore.js';
import { SessionFiles } from '../src/storage/sessionFiles.js';
import { SessionInUseError } from '../src/storage/storeErrors.js';

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});
function newHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'workmem-record-'));
  homes.push(home);
  return home;
}
const clock = () => {
  let t = 1_700_000_000_000;
  return () => (t += 10);
};
const ID = '0a0b0c0d-0000-4000-8000-000000000001';
const CALL = { id: 'c1', type: 'function' as const, function: { name: 'read', arguments: '{}' } };

/** One script of calls, run on either: SessionFiles (sync) or SessionRecord (awaited). */
async function script(s: {
  appendMessage: SessionFiles['appendMessage'] | SessionRecord['appendMessage'];
  appendCompaction: SessionFiles['appendCompaction'] | SessionRecord['appendCompaction'];
  appendEvent: SessionFiles['appendEvent'] | SessionRecord['appendEvent'];
  updateMeta: SessionFiles['updateMeta'] | SessionRecord['updateMeta'];
  memory: { writeSystem(path: string, content: string, options?: { append?: boolean }): unknown };
}): Promise<void> {
  await s.appendMessage(1, { role: 'user', content: 'Plan a trip to Lyon\nwith details' }, 7, { sync: true });
  await s.appendMessage(1, { role: 'assistant', content: null, tool_calls: [CALL] }, 3, { sync: false });
  await s.appendMessage(1, { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(50) }, 20, { sync: false });
  await s.appendMessage(1, { role: 'assistant', content: 'Done.' }, 2, { sync: true });
  await s.appendEvent(1, 'memory_updated', { path: 'working-memory/overview.md' });
  await s.updateMeta({ memoryWrites: 1, historyMode: 'hybrid' });
  await s.memory.writeSystem('archive/turn-1.md', '# Turn 1');
  await s.memory.writeSystem('archive/turn-1.md', '# More', { append: true });
  await s.appendCompaction({
    type: 'compaction',
    turn: 1,
    reason: 'manual',
    target: 'tools',
    strategy: 'archive',
    stubs: [{ seq: 3, content: '[archived]', tokens: 2 }],
    files: ['working-memory/archive/turn-1.md'],
    tokensBefore: 32,
    tokensAfter: 14,
  });
  await s.appendMessage(2, { role: 'user', content: 'next' }, 1, { sync: true });
}

function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['messages.jsonl', 'meta.json', 'working-memory/overview.md', 'working-memory/archive/turn-1.md'])
    out[name] = readFileSync(join(dir, name), 'utf8');
  return out;
}

describe('SessionRecord', () => {
  it('writes the same files as SessionFiles for the same calls, and derives the same history', async () => {
    const [a, b] = [newHome(), newHome()];
    const redact = (t: string) => t.replaceAll('Lyon', '[city]');
    const files = SessionFiles.create({ home: a, cwd: '/w/p', id: ID, now: clock(), redact, name: 'n' });
    await script(files);
    const record = await SessionRecord.create(fileSessionStore({ home: b }), { cwd: '/w/p', id: ID, now: clock(), redact, name: 'n' });
    await script(record);
    expect(record.history).toEqual(files.history);
    expect(record.meta).toEqual(files.meta);
    expect(record.lastTurn).toBe(2);
    expect(record.dir).toBe(files.dir.replace(a, b));
    files.close();
    await record.close();
    expect(filesOf(record.dir)).toEqual(filesOf(files.dir));
    expect(filesOf(record.dir)['messages.jsonl']).not.toContain('Lyon');

    const again = await SessionRecord.open(fileSessionStore({ home: b }), ID, { now: clock() });
    const reopened = SessionFiles.open(files.dir, { now: clock() });
    expect(again.history).toEqual(reopened.history);
    expect(again.trackerFacts).toEqual(reopened.trackerFacts);
    expect(again.trackerFacts).toMatchObject({ updates: 1, requestsSinceUpdate: 0 });
    expect(again.damage).toEqual([]);
    expect((await again.memory.snapshot()).content).toBe((reopened.memory.snapshot()).content);
    reopened.close();
    await again.close();
  });

  it('reports damaged lines, rebuilds an unreadable meta from the log and heals lagging counts, as SessionFiles does', async () => {
    const [a, b] = [newHome(), newHome()];
    const files = SessionFiles.create({ home: a, cwd: '/w/p', id: ID, now: clock() });
    await script(files);
    files.close();
    const record = await SessionRecord.create(fileSessionStore({ home: b }), { cwd: '/w/p', id: ID, now: clock() });
    await script(record);
    await record.close();
    for (const dir of [files.dir, record.dir]) {
      appendFileSync(join(dir, 'messages.jsonl'), '{ not json\n');
      writeFileSync(join(dir, 'meta.json'), '{"format": 2}');
    }
    const reopened = SessionFiles.open(files.dir, { now: clock() });
    const again = await SessionRecord.open(fileSessionStore({ home: b }), ID, { now: clock() });
    expect(again.damage).toEqual(reopened.damage);
    expect(again.damage[0]).toMatch(/messages\.jsonl line 8: not JSON/);
    expect(again.damage[1]).toMatch(/meta\.json unreadable/);
    expect(again.meta).toEqual({ ...reopened.meta, cwd: again.meta.cwd });
    expect(again.meta).toMatchObject({ messageCount: 5, historyMode: 'phase1', memoryWrites: 1, title: 'Plan a trip to Lyon' });
    expect(JSON.parse(readFileSync(join(record.dir, 'damage.json'), 'utf8')).lines).toHaveLength(1);
    expect(readdirSync(record.dir).filter((n) => n.startsWith('meta.json.corrupt-'))).toHaveLength(1);
    reopened.close();
    await again.close();
  });

  it('takes the lease: a second open fails with SessionInUseError until the first is closed', async () => {
    const store = fileSessionStore({ home: newHome() });
    const record = await SessionRecord.create(store, { cwd: '/w/p' });
    await expect(SessionRecord.open(store, record.id)).rejects.toThrow(SessionInUseError);
    await record.close();
    await (await SessionRecord.open(store, record.id)).close();
  });

  it('keeps concurrent appends in order, each with the seq that is next', async () => {
    const store = fileSessionStore({ home: newHome() });
    const record = await SessionRecord.create(store, { cwd: '/w/p' });
    const entries = await Promise.all(
      Array.from({ length: 20 }, (_, i) => record.appendMessage(1, { role: 'user', content: `m${i}` }, 1, { sync: false })),
    );
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(record.history.items.slice(0, record.history.length).map((i) => i.message.content)).toEqual(entries.map((e) => e.message.content));
    await record.close();
  });
});
