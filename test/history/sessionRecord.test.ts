/**
 * SessionRecord over the filesystem store: the files of the layout, masked; the derived
 * history read back the same; meta rebuilt and healed from the log, damage reported,
 * tracker facts, one writer, appends in order.
 */
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionRecord } from '../../src/history/sessionRecord.js';
import { fileSessionStore } from '../../src/storage/fileSessionStore.js';
import { SessionInUseError } from '../../src/storage/storeErrors.js';

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

/** One script of calls: messages, a tool call and result, an event, meta, an archive and a compaction. */
async function script(s: SessionRecord): Promise<void> {
  await s.appendMessage(1, { role: 'user', content: 'Plan a trip to Lyon\nwith details' }, 7, { sync: true });
  await s.appendMessage(1, { role: 'assistant', content: null, tool_calls: [CALL] }, 3, { sync: false });
  await s.appendMessage(1, { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(50) }, 20, { sync: false });
  await s.appendMessage(1, { role: 'assistant', content: 'Done.' }, 2, { sync: true });
  await s.appendEvent(1, 'memory_updated', { path: 'working-memory/overview.md' });
  await s.updateMeta({ memoryWrites: 1, historyMode: 'hybrid' });
  await s.memory.writeSystem('archive/turn-1.md', '# Turn 1');
  await s.appendCompaction(
    {
      type: 'compaction',
      turn: 1,
      reason: 'manual',
      target: 'tools',
      strategy: 'archive',
      stubs: [{ seq: 3, content: '[archived]', tokens: 2 }],
      files: ['working-memory/archive/turn-1.md'],
      tokensBefore: 32,
      tokensAfter: 14,
    },
    { path: 'archive/turn-1.md', content: '# More', append: true },
  );
  await s.appendMessage(2, { role: 'user', content: 'next' }, 1, { sync: true });
}

function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['messages.jsonl', 'meta.json', 'working-memory/overview.md', 'working-memory/archive/turn-1.md'])
    out[name] = readFileSync(join(dir, name), 'utf8');
  return out;
}

describe('SessionRecord', () => {
  it('writes the log, meta.json and working-memory files of the layout, masked, and reads back the same history', async () => {
    const home = newHome();
    const redact = (t: string) => t.replaceAll('Lyon', '[city]');
    const record = await SessionRecord.create(fileSessionStore({ home }), { cwd: '/w/p', id: ID, now: clock(), redact, name: 'n' });
    await script(record);
    const history = record.history;
    expect(history.items.slice(0, history.length).map((i) => [i.turn, i.message.role, i.message.content])).toEqual([
      [1, 'user', 'Plan a trip to Lyon\nwith details'],
      [1, 'assistant', null],
      [1, 'tool', '[archived]'],
      [1, 'assistant', 'Done.'],
      [2, 'user', 'next'],
    ]);
    expect(record.meta).toMatchObject({
      id: ID,
      name: 'n',
      messageCount: 5,
      memoryWrites: 1,
      historyMode: 'hybrid',
      title: 'Plan a trip to Lyon',
    });
    expect(record.lastTurn).toBe(2);
    expect(record.dir.startsWith(join(home, 'sessions'))).toBe(true);
    await record.close();
    const files = filesOf(record.dir);
    expect(files['messages.jsonl']!.trim().split('\n')).toHaveLength(7); // 5 messages, an event, a compaction
    expect(files['messages.jsonl']).not.toContain('Lyon');
    expect(JSON.parse(files['meta.json']!)).toMatchObject({ id: ID, messageCount: 5, historyMode: 'hybrid' });
    expect(files['working-memory/archive/turn-1.md']).toMatch(/# Turn 1[\s\S]*# More/);

    const again = await SessionRecord.open(fileSessionStore({ home }), ID, { now: clock() });
    // The same history, as it was written: masked.
    const masked = history.items
      .slice(0, history.length)
      .map((i) => ({ ...i, message: { ...i.message, content: i.message.content && redact(i.message.content) } }));
    expect(again.history.items.slice(0, again.history.length)).toEqual(masked);
    expect(again.trackerFacts).toMatchObject({ updates: 1, requestsSinceUpdate: 0 });
    expect(again.damage).toEqual([]);
    expect((await again.memory.snapshot()).content).toBe(files['working-memory/overview.md']!);
    await again.close();
  });

  it('reports damaged lines, rebuilds an unreadable meta from the log and heals lagging counts', async () => {
    const home = newHome();
    const record = await SessionRecord.create(fileSessionStore({ home }), { cwd: '/w/p', id: ID, now: clock() });
    await script(record);
    await record.close();
    appendFileSync(join(record.dir, 'messages.jsonl'), '{ not json\n');
    writeFileSync(join(record.dir, 'meta.json'), '{"format": 2}');
    const again = await SessionRecord.open(fileSessionStore({ home }), ID, { now: clock() });
    expect(again.damage[0]).toMatch(/messages\.jsonl line 8: not JSON/);
    expect(again.damage[1]).toMatch(/meta\.json unreadable/);
    expect(again.meta).toMatchObject({ messageCount: 5, historyMode: 'phase1', memoryWrites: 1, title: 'Plan a trip to Lyon' });
    expect(JSON.parse(readFileSync(join(record.dir, 'damage.json'), 'utf8')).lines).toHaveLength(1);
    expect(readdirSync(record.dir).filter((n) => n.startsWith('meta.json.corrupt-'))).toHaveLength(1);
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
    expect(record.history.items.slice(0, record.history.length).map((i) => i.message.content)).toEqual(
      entries.map((e) => e.message.content),
    );
    await record.close();
  });
});

describe('durability per turn', () => {
  it('a turn makes the log durable twice: the user message before the model is asked, the answer before the turn ends', async () => {
    const { newSession } = await import('../helpers.js');
    const { scriptedModel } = await import('../../src/llm/scriptedModel.js');
    let syncsWhenAsked = -1;
    const session = await newSession({
      llm: scriptedModel(() => {
        syncsWhenAsked = session.record.storage.log.syncs!;
        return { text: 'noted' };
      }),
    });
    const before = session.record.storage.log.syncs!;
    await session.prompt('first');
    // The user's message was durable when the model was asked; the answer by the end of the turn; nothing twice.
    expect(syncsWhenAsked - before).toBe(1);
    expect(session.record.storage.log.syncs! - before).toBe(2);
    await session.prompt('second');
    expect(session.record.storage.log.syncs! - before).toBe(4);
    await session.close();
  });
});
