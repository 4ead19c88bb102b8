/**
 * The session write quota (issue 24 #15): what the model's write and edit calls hold in
 * working-memory, each file at the size its last write left, is limited over the whole
 * session; a write past it is refused with a tool error saying what is used, the limit and
 * how to make room; trimming always passes; a resumed session knows what it holds; and
 * `workmem sessions show` prints the usage against the quota. On both stores.
 */
import { describe, expect, it } from 'vitest';
import { main as sessionsMain } from '../../src/cli/sessions.js';
import type { CliIO } from '../../src/cli/cliIO.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { resolveSettings } from '../../src/settings/config.js';
import { openSession } from '../../src/session/index.js';
import { collect, newSession, ofType } from '../helpers.js';
import { storesUnderTest } from '../storage/stores.js';

const KB = 1024;
const write = (path: string, kb: number, fill = 'n'): ScriptedReply => ({
  toolCalls: [{ name: 'write', arguments: { path, content: fill.repeat(kb * KB) } }],
});
const settings = { sessionWriteQuotaBytes: 64 * KB };

describe.each(storesUnderTest('session write quota'))('$name store', (where) => {
  it("round 3 #15: the model's files are held to the session's quota across turns and a resume; rewriting and trimming always pass", async () => {
    const w = where.fresh();
    const replies: ScriptedReply[] = [
      write('detail/a.md', 40),
      { text: 'Saved.' },
      write('overview.md', 2, 'o'),
      write('overview.md', 2, 'p'), // a rewrite: held stays 42 KB, whatever is written over and over
      write('detail/b.md', 30), // 72 KB: refused
      write('detail/a.md', 1), // trimmed: 41 → 3 KB held
      write('detail/b.md', 30), // 33 KB: fits now
      { text: 'Done.' },
    ];
    const session = await newSession({ llm: scriptedModel(replies), ...w, settings });
    const events = collect(session);
    await session.prompt('Save the notes.');
    await session.prompt('Save more.');
    await session.close();
    const results = ofType(events, 'tool_end');
    expect(results.map((r) => r.isError)).toEqual([false, false, false, true, false, false]);
    expect(results[3]!.content).toBe(
      "Error: not written: your files in working-memory already hold 42.0 KB of this session's quota of 64.0 KB, and this write would bring them to 72.0 KB. " +
        'The quota is for the whole session: it does not reset with the next turn. Make room first: rewrite long files shorter (edit, or write a shorter version; write an empty file in place of one no longer needed), ' +
        'keep notes brief and in fewer files, and leave bulky text out of working memory. compact_history shortens the conversation, not your files.',
    );

    // Resumed (elsewhere, for Postgres): 33 KB held, so 40 KB more is refused; an edit that shrinks a file passes.
    const again = await openSession(session.id, {
      llm: scriptedModel([
        write('detail/c.md', 40),
        { toolCalls: [{ name: 'edit', arguments: { path: 'detail/b.md', old: 'n'.repeat(30 * KB), new: 'short' } }] },
        write('detail/c.md', 40),
        { text: 'Done.' },
      ]),
      ...where.elsewhere(w),
      env: {},
      settings,
    });
    const later = collect(again);
    await again.prompt('And this.');
    await again.close();
    const after = ofType(later, 'tool_end');
    expect(after.map((r) => r.isError)).toEqual([true, false, false]);
    expect(after[0]!.content).toMatch(
      /already hold 33\.0 KB of this session's quota of 64\.0 KB, and this write would bring them to 73\.0 KB/,
    );
  });
});

describe('the session write quota as a setting', () => {
  it('round 3 #15: defaults to 32 MB; WM_SESSION_WRITE_QUOTA and the option set it; sessions show prints the usage', async () => {
    const model = { contextWindow: 128_000, maxOutputTokens: 4096 };
    expect(resolveSettings(model, {}, {}).turn.sessionWriteQuotaBytes).toBe(32 * 1024 * KB);
    expect(resolveSettings(model, {}, { WM_SESSION_WRITE_QUOTA: '2048' }).turn.sessionWriteQuotaBytes).toBe(2048);
    expect(resolveSettings(model, { sessionWriteQuotaBytes: 4096 }, { WM_SESSION_WRITE_QUOTA: '2048' }).turn.sessionWriteQuotaBytes).toBe(
      4096,
    );
    expect(() => resolveSettings(model, {}, { WM_SESSION_WRITE_QUOTA: '12' })).toThrow(/WM_SESSION_WRITE_QUOTA="12" is invalid/);

    const session = await newSession({ llm: scriptedModel([write('detail/a.md', 40), write('detail/z.md', 8), { text: 'Saved.' }]) });
    await session.prompt('Save it.');
    await session.close();
    const home = session.dir.split('/sessions/')[0]!;
    let out = '';
    const io = {
      stdout: { write: (t: string) => (out += t) },
      stderr: { write: () => true },
      env: { WM_SESSION_WRITE_QUOTA: String(256 * KB) },
      cwd: '/work/project',
    } as unknown as CliIO;
    expect(await sessionsMain({ flags: { home }, positionals: ['show', session.id] }, io)).toBe(0);
    expect(out).toMatch(/^ {2}written: {2}48\.0 KB held by the model's files \(2\), of the session write quota of 256\.0 KB \(18 %\)$/m);
  });
});
