import { appendFileSync, existsSync, linkSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/settings/config.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { createSession, openSession } from '../../src/session/index.js';
import { defineTool } from '../../src/tools/tool.js';
import { collect, newSession, ofType, tempHome } from '../helpers.js';
import { logOf, storesUnderTest } from '../storage/stores.js';

const call = (name: string, args: string | Record<string, unknown>): ScriptedReply => ({ toolCalls: [{ name, arguments: args }] });

describe.each(storesUnderTest('bad input'))('malformed and unknown tool calls ($name store)', (store) => {
  it('each gets an error result the model can read, and the turn goes on to its answer', async () => {
    const throwing = defineTool({
      name: 'explode',
      description: 'Always fails',
      parameters: z.object({}),
      execute: () => {
        throw new Error('kaboom');
      },
    });
    const weird = defineTool({ name: 'weird', description: 'Returns a number', parameters: z.object({}), execute: () => 42 as never });
    const llm = scriptedModel([
      call('no_such_tool', {}),
      call('write', '{"path": "working-memory/overview.md", "content": '),
      call('write', { path: 42 }),
      call('explode', {}),
      call('weird', {}),
      call('read', { path: 'working-memory/overview.md', offset: -3 }),
      { text: 'Recovered.' },
    ]);
    const session = await newSession({ ...store.fresh(), llm, tools: [throwing, weird] });
    const events = collect(session);
    const result = await session.prompt('Try everything.');
    expect(result).toMatchObject({ status: 'done', text: 'Recovered.', requests: 7 });
    const results = ofType(events, 'tool_end');
    expect(results.map((r) => r.isError)).toEqual([true, true, true, true, true, true]);
    expect(results[0]!.content).toMatch(/unknown tool "no_such_tool".*read, write, edit, compact_history, explode, weird/);
    expect(results[1]!.content).toMatch(/arguments of write are not valid JSON/);
    expect(results[2]!.content).toMatch(/invalid arguments for write[\s\S]*path/);
    expect(results[3]!.content).toMatch(/explode failed: kaboom/);
    expect(results[4]!.content).toMatch(/weird returned number/);
    expect(results[5]!.content).toMatch(/invalid arguments for read[\s\S]*offset/);
    // Every call has its result in the log, so the history stays a valid message list.
    const messages = (await logOf(session)).flatMap((e) => (e.type === 'message' ? [e.message] : []));
    const callIds = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
    const resultIds = messages.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
    expect(resultIds).toEqual(callIds);
    // The model saw each error in its next request.
    expect(llm.requests[1]!.messages.at(-1)!.content).toContain('unknown tool');
    expect(session.memory()).toContain('## Current task'); // nothing was written
    await session.close();
  });
});

describe('paths outside working-memory/', () => {
  it('are refused with a clear error, and nothing outside is read or touched', async () => {
    const home = tempHome();
    const secret = join(home, 'secret.txt');
    writeFileSync(secret, 'TOP SECRET');
    const attempts: [string, Record<string, unknown>][] = [
      ['read', { path: '../meta.json' }],
      ['read', { path: 'working-memory/../../secret.txt' }],
      ['read', { path: secret }],
      ['read', { path: '~/secret.txt' }],
      ['read', { path: 'detail\\..\\..\\meta.json' }],
      ['read', { path: 'detail/%2e%2e/%2e%2e/meta.json' }],
      ['read', { path: 'detail/x\u0000.md' }],
      ['read', { path: 'detail/link-out.md' }],
      ['read', { path: 'detail/hard.md' }],
      ['read', { path: 'detail/dir-link/passwd' }],
      ['write', { path: '../messages.jsonl', content: 'x' }],
      ['write', { path: '/tmp/escape.txt', content: 'x' }],
      ['write', { path: 'detail/link-out.md', content: 'overwritten' }],
      ['write', { path: 'detail/dir-link/new.md', content: 'x' }],
      ['write', { path: 'working-memory', content: 'x' }],
      ['edit', { path: '../meta.json', old: 'id', new: 'x' }],
      ['write', { path: 'detail', content: 'x' }],
    ];
    const llm = scriptedModel([...attempts.map(([name, args]) => call(name, args)), { text: 'done' }]);
    const session = await createSession({ llm, home, cwd: '/p', env: {} });
    const detail = join(session.dir, 'working-memory', 'detail');
    symlinkSync(secret, join(detail, 'link-out.md'));
    symlinkSync(home, join(detail, 'dir-link'));
    linkSync(secret, join(detail, 'hard.md'));
    const events = collect(session);
    await session.prompt('Go.');
    const results = ofType(events, 'tool_end');
    expect(results).toHaveLength(attempts.length);
    for (const [i, r] of results.entries()) {
      expect(r.isError, `${attempts[i]![0]} ${JSON.stringify(attempts[i]![1])}: ${r.content}`).toBe(true);
      expect(r.content).not.toContain('TOP SECRET');
    }
    expect(results[0]!.content).toMatch(/leaves working-memory\/ \('\.\.' refused\)/);
    expect(results[2]!.content).toMatch(/absolute path .* refused/);
    expect(results[7]!.content).toMatch(/symlink/);
    expect(results[8]!.content).toMatch(/hard-linked/);
    expect(readFileSync(secret, 'utf8')).toBe('TOP SECRET');
    expect(existsSync('/tmp/escape.txt')).toBe(false);
    expect(readdirSync(home).sort()).toEqual(['secret.txt', 'sessions', 'state'].filter((f) => existsSync(join(home, f))));
    await session.close();
  });

  it('writes inside are atomic and the 5 KB soft limit is reported, not enforced', async () => {
    const big = `# Working Memory\n\n## Known facts\n${'- a fact worth keeping\n'.repeat(300)}`;
    const llm = scriptedModel([
      call('write', { path: 'overview.md', content: big }),
      call('write', { path: 'working-memory/detail/deep/notes.md', content: '# Notes\nx' }),
      { text: 'ok' },
    ]);
    const session = await newSession({ llm });
    const events = collect(session);
    await session.prompt('Write a lot.');
    const [first, second] = ofType(events, 'tool_end');
    expect(first!.isError).toBe(false);
    expect(first!.content).toMatch(/Warning: overview.md is 6\.\d KB, over the 5 KB guideline/);
    expect(ofType(events, 'memory_updated')[0]!.warning).toMatch(/5 KB/);
    expect(session.memory()).toBe(big);
    expect(second!.content).toBe('Wrote working-memory/detail/deep/notes.md (9 bytes).');
    // No temporary files are left behind.
    expect(readdirSync(join(session.dir, 'working-memory')).filter((f) => f.includes('.tmp'))).toEqual([]);
    await session.close();
  });
});

describe('damaged session files', () => {
  async function sessionWithTurns(home: string) {
    const session = await newSession({ llm: scriptedModel(() => ({ text: 'answer' })), home });
    await session.prompt('first question');
    await session.prompt('second question');
    await session.close();
    return session;
  }

  it('a corrupt line and a truncated last line are reported and set aside; everything else loads', async () => {
    const home = tempHome();
    const { id, dir } = await sessionWithTurns(home);
    const log = join(dir, 'messages.jsonl');
    const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    // Corrupt the middle (disk damage) and tear the end (a crash mid-append).
    writeFileSync(log, [...lines.slice(0, 2), '{"seq": 99, "type": "mess', ...lines.slice(2)].join('\n') + '\n');
    appendFileSync(log, '{"seq":100,"ts":1,"turn":3,"type":"message","tokens":5,"message":{"role":"user","con');

    const llm = scriptedModel(() => ({ text: 'still works' }));
    const session = await openSession(id, { llm, home, env: {} });
    expect(session.damage).toEqual([expect.stringMatching(/line 3: not JSON/), expect.stringMatching(/line 6: truncated last line/)]);
    expect(session.history.length).toBe(4);
    const report = JSON.parse(readFileSync(join(dir, 'damage.json'), 'utf8'));
    expect(report.lines.map((l: { raw: string }) => l.raw)).toEqual(['{"seq": 99, "type": "mess', expect.stringContaining('"con')]);

    const result = await session.prompt('third question');
    expect(result.status).toBe('done');
    expect(llm.requests[0]!.messages.filter((m) => m.role === 'user').map((m) => m.content!.split('\n\n<context_meta>')[0])).toEqual([
      'first question',
      'second question',
      'third question',
    ]);
    await session.close();

    // The torn line stays where it was; what came after it is intact.
    const again = await openSession(id, { llm, home, env: {} });
    expect(again.damage).toHaveLength(2);
    expect(again.history.length).toBe(6);
    await again.close();
  });

  it('a corrupt meta.json is kept aside and rebuilt from the log', async () => {
    const home = tempHome();
    const { id, dir } = await sessionWithTurns(home);
    writeFileSync(join(dir, 'meta.json'), '{"format": 1, "id": ');
    const session = await openSession(id, { llm: scriptedModel([{ text: 'ok' }]), home, env: {} });
    expect(session.damage).toEqual([
      expect.stringMatching(/meta\.json unreadable .*rebuilt from messages\.jsonl, the old file kept as meta\.json\.corrupt-\d+/),
    ]);
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    expect(meta).toMatchObject({ id, messageCount: 4, turns: 2, title: 'first question', historyMode: 'phase1' });
    expect(readdirSync(dir).some((f) => f.startsWith('meta.json.corrupt-'))).toBe(true);
    expect((await session.prompt('go on')).status).toBe('done');
    await session.close();
  });

  it('a malformed reminder state starts afresh, with a note', async () => {
    const home = tempHome();
    const { id } = await sessionWithTurns(home);
    const { openStateStore } = await import('../../src/storage/openStateStore.js');
    const store = await openStateStore(join(home, 'state'));
    await store.set(`tracker:${id}`, { rounds: 'many' });
    await store.close();
    const session = await openSession(id, { llm: scriptedModel([]), home, env: {} });
    expect(session.damage).toEqual(['reminder tracker state was malformed; started afresh']);
    // Afresh, then level with the log: two model responses since the memory was last written.
    expect(session.state.tracker).toMatchObject({ rounds: 2, updates: 0, reminders: 0 });
    await session.close();
  });
});

describe('bad options', () => {
  it('invalid settings, env values, ids and prompts get clear errors', async () => {
    const llm = scriptedModel([]);
    const home = tempHome();
    await expect(createSession({ llm, home, settings: { contextWindow: -5 } })).rejects.toThrow(/contextWindow=-5/);
    await expect(createSession({ llm, home, env: { WM_MIN_ROUNDS: '-1' } })).rejects.toThrow(ConfigError);
    await expect(createSession({ llm, home, settings: { reserveOutputTokens: 200_000 } })).rejects.toThrow(
      /reserveOutputTokens \(200000\) must be smaller/,
    );
    await expect(openSession('../../etc', { llm, home })).rejects.toThrow(/not a session id/);
    await expect(openSession('0000dead', { llm, home })).rejects.toThrow(/no session with id 0000dead/);
    // A host tool may take the name of one of workmem's (workmem's are then prefixed); two of the host's may not share one.
    const dup = defineTool({ name: 'lookup', description: 'twice', parameters: z.object({}), execute: () => '' });
    await expect(createSession({ llm, home, tools: [dup, dup], env: {} })).rejects.toThrow(/two tools are named "lookup"/);
    expect(() => defineTool({ name: 'bad name!', description: '', parameters: z.object({}), execute: () => '' })).toThrow(/must match/);
    const session = await createSession({ llm, home, env: {} });
    await expect(session.prompt('   ')).rejects.toThrow(/non-empty/);
    await session.close();
    await expect(session.prompt('after close')).rejects.toThrow(/closed/);
    mkdirSync(join(home, 'x'));
  });
});
