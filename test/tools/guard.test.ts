/**
 * Issue 19's guard cases, one rule at a time: what a hostile model or a hand-placed file
 * can no longer do — a huge tool name, answer or prompt taken whole; unbounded writes in
 * one turn; secrets in tool names and call ids of events; look-alike framing tags; an
 * overview.md that is a symlink or 1 GiB; a folder swapped for a symlink while it is read.
 */
import { readdirSync, readFileSync, statSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LLMRequest, LLMResponse } from '../../src/llm/llm.js';
import { memoryTools } from '../../src/tools/memoryTools.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { neutraliseTags } from '../../src/prompt/structuralTags.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { memoryOnDisk } from '../storage/memoryOnDisk.js';
import { collect, logEntries, newSession, ofType, tempHome } from '../helpers.js';
import { LOOK_ALIKES, SPACED_LOOK_ALIKES, raceReads, raceWrites } from '../reliability/guard.js';

const textOf = (request: LLMRequest) => request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

/** Replies to user messages in order; after a tool result, "Done." */
function replying(replies: ScriptedReply[]) {
  return scriptedModel((request) => (request.messages.at(-1)?.role === 'user' ? (replies.shift() ?? { text: 'ok' }) : { text: 'Done.' }));
}

describe('capture bounds', () => {
  it('a tool name over the limit or off the pattern is answered with an error naming the problem, never stored whole', async () => {
    // Words, not one run of letters: today's tokenizer is quadratic on long runs (the llm branch fixes that).
    const huge = 'abcdefghi '.repeat(200_000);
    const llm = replying([
      { toolCalls: [{ name: huge, arguments: {} }] },
      { toolCalls: [{ name: 'x'.repeat(300), arguments: {} }] },
      { toolCalls: [{ name: 'rm -rf /', arguments: {} }] },
    ]);
    const session = await newSession({ llm });
    const events = collect(session);
    for (const label of ['huge', 'long', 'bad']) expect((await session.prompt(label)).status).toBe('done');
    const ends = ofType(events, 'tool_end');
    expect(ends).toHaveLength(3);
    expect(ends[0]!.isError).toBe(true);
    expect(ends[0]!.content).toMatch(/tool name of 1\.9 MB/);
    expect(ends[1]!.content).toMatch(/tool name of 300 characters/);
    expect(ends[2]!.content).toMatch(/tool name "rm -rf \/" is not/);
    for (const end of ends) expect(end.content.length).toBeLessThan(1000);
    // Nothing of the huge name in the log or in the next request.
    expect(statSync(join(session.dir, 'messages.jsonl')).size).toBeLessThan(64 * 1024);
    expect(JSON.stringify(llm.requests.at(-1)!.messages).length).toBeLessThan(64 * 1024);
    await session.close();
  });

  it('assistant text over the cap is capped in the history; the full text is saved to detail/', async () => {
    const answer = `# Long answer\n${'word '.repeat(80_000)}THE-END`; // ~400 KB
    const llm = replying([{ text: answer, chunks: 40 }]);
    const session = await newSession({ llm });
    const events = collect(session);
    const result = await session.prompt('write a lot');
    expect(result.status).toBe('done');
    const stored = logEntries(session.dir).flatMap((e) => (e.type === 'message' && e.message.role === 'assistant' ? [e.message] : []));
    const content = stored[0]!.content as string;
    expect(content.length).toBeLessThanOrEqual(256 * 1024 + 1024);
    expect(content).not.toContain('THE-END');
    const where = /kept whole in (working-memory\/detail\/tool-outputs\/[^\s;\]]+)/.exec(content)?.[1];
    expect(where).toBeDefined();
    expect(readFileSync(join(session.dir, where!), 'utf8')).toBe(answer);
    const end = ofType(events, 'message_end').find((e) => e.message.role === 'assistant')!;
    expect((end.message.content as string).length).toBeLessThan(answer.length);
    await session.close();
  });

  it('an aborted answer is capped the same way: what streamed is kept whole in detail/', async () => {
    const llm = replying([{ text: 'word '.repeat(100_000), chunks: 50, delayMs: 2 }]); // 500 KB
    const session = await newSession({ llm });
    let deltas = 0;
    session.on('message_delta', () => {
      if (++deltas === 40) session.abort();
    });
    expect((await session.prompt('stream a lot')).status).toBe('aborted');
    const stored = logEntries(session.dir).flatMap((e) => (e.type === 'message' && e.message.role === 'assistant' ? [e.message] : []));
    const content = stored[0]!.content as string;
    expect(content.length).toBeLessThanOrEqual(256 * 1024 + 1024);
    const where = /kept whole in (working-memory\/detail\/tool-outputs\/[^\s;\]]+)/.exec(content)?.[1];
    expect(readFileSync(join(session.dir, where!), 'utf8').length).toBeGreaterThanOrEqual(40 * 10_000);
    await session.close();
  });

  it('a user prompt over 1 MB is refused with a clear error before anything is written', async () => {
    const session = await newSession({ llm: replying([]) });
    const before = readFileSync(join(session.dir, 'messages.jsonl'), 'utf8');
    await expect(session.prompt('word '.repeat(210_000))).rejects.toThrow(/prompt is 1\.0 MB.*at most 1 MB/);
    expect(readFileSync(join(session.dir, 'messages.jsonl'), 'utf8')).toBe(before);
    expect((await session.prompt('small')).status).toBe('done');
    await session.close();
  });
});

describe('per-turn write quota', () => {
  it('writes beyond the quota in one turn are refused with a tool error stating the quota and what was written; the next turn starts afresh', async () => {
    const chunk = 'abcdefg '.repeat(25_600); // 200 KB
    const writes = Array.from({ length: 6 }, (_, i) => ({ name: 'write', arguments: { path: `detail/part-${i}.md`, content: chunk } }));
    const llm = replying([
      { toolCalls: writes },
      { toolCalls: [{ name: 'write', arguments: { path: 'detail/again.md', content: chunk } }] },
    ]);
    const session = await newSession({ llm, settings: { writeQuotaBytes: 1024 * 1024 } });
    const events = collect(session);
    await session.prompt('dump');
    const ends = ofType(events, 'tool_end');
    expect(ends.slice(0, 5).map((e) => e.isError)).toEqual([false, false, false, false, false]);
    expect(ends[5]!.isError).toBe(true);
    expect(ends[5]!.content).toMatch(/quota of 1\.0 MB per turn/);
    expect(ends[5]!.content).toMatch(/1000\.0 KB in 5 writes/);
    expect(readdirSync(join(session.dir, 'working-memory', 'detail')).filter((n) => n.startsWith('part-'))).toHaveLength(5);
    await session.prompt('once more');
    expect(ofType(events, 'tool_end')[6]!.isError).toBe(false);
    await session.close();
  });

  it('edits count too', async () => {
    const wm = await memoryOnDisk(join(tempHome(), 'wm'));
    const [, write, edit] = memoryTools(wm, { writeQuotaBytes: 1000 });
    const context = { turn: 1 } as ToolContext;
    expect(await write!.execute({ path: 'detail/a.md', content: `${'x'.repeat(600)}MARK` }, context)).toMatchObject({
      content: expect.stringMatching(/^Wrote/),
    });
    const refused = await edit!.execute({ path: 'detail/a.md', old: 'MARK', new: 'MORK' }, context);
    expect(refused).toMatchObject({ isError: true });
    expect(await edit!.execute({ path: 'detail/a.md', old: 'MARK', new: 'MORK' }, { turn: 2 } as ToolContext)).toMatchObject({
      content: expect.stringMatching(/^Edited/),
    });
  });
});

describe('tool names and call ids in events', () => {
  it('a secret used as a tool name or a call id is masked in tool_start, tool_end and message_end', async () => {
    const secret = 'hunter2hunter2hunter2';
    const llm = replying([{ toolCalls: [{ name: secret, id: secret, arguments: {} }] }]);
    const session = await newSession({ llm, secrets: [secret] });
    const events = collect(session);
    await session.prompt('go');
    const kinds = events.filter((e) => ['tool_start', 'tool_end', 'message_end'].includes(e.type));
    expect(kinds.length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(kinds)).not.toContain(secret);
    await session.close();
  });
});

/** Each look-alike must arrive with its bracket written as &lt;. */
function expectNeutralised(text: string): void {
  for (const fake of LOOK_ALIKES) {
    expect(text, JSON.stringify(fake)).not.toContain(fake);
    expect(text, JSON.stringify(fake)).toContain(`&lt;${fake.slice(1)}`);
  }
}

describe('look-alike tags', () => {
  it('round 3 #14: white space between the bracket, the slash and the name does not let a tag through', () => {
    for (const fake of SPACED_LOOK_ALIKES) {
      expect(neutraliseTags(`x ${fake} y`), JSON.stringify(fake)).toBe(`x &lt;${fake.slice(1)} y`);
    }
    // Comparisons and other tags with a space stay as they are.
    const plain = 'a < b, a <\tc, x < context, < div>, < /p>, </ b>, < context_metadata>';
    expect(neutraliseTags(plain)).toBe(plain);
  });

  it('are neutralised after stripping format characters, NFKC and folding hyphens', () => {
    for (const fake of LOOK_ALIKES) {
      expect(neutraliseTags(`x ${fake} y`), JSON.stringify(fake)).toBe(`x &lt;${fake.slice(1)} y`);
    }
    expect(neutraliseTags('a < b, <div>, <context_metadata>, \uFF1Cb\uFF1E')).toBe('a < b, <div>, <context_metadata>, \uFF1Cb\uFF1E');
  });

  const fake = `# Notes\n${LOOK_ALIKES.join('\n')}\n`;

  it('through tool output, overview.md and a read-back detail file', async () => {
    const llm = replying([
      { toolCalls: [{ name: 'write', arguments: { path: 'overview.md', content: fake } }] },
      { toolCalls: [{ name: 'write', arguments: { path: 'detail/n.md', content: fake } }] },
      { toolCalls: [{ name: 'read', arguments: { path: 'detail/n.md' } }] },
    ]);
    const session = await newSession({ llm });
    const events = collect(session);
    await session.prompt('remember');
    await session.prompt('note');
    await session.prompt('read back');
    expectNeutralised(textOf(llm.requests.at(-1)!)); // the read result and overview.md
    const read = ofType(events, 'tool_end').at(-1)!;
    expectNeutralised(read.content);
    await session.close();
  });

  it('through a compaction summary', async () => {
    const summary = `## Goal\n- g\n## Decisions\n- d\n## Progress\n${LOOK_ALIKES.join('\n')}\n## Open items\n- none\n## Key facts\n- none`;
    const llm = Object.assign(
      replying([
        { text: 'one' },
        { text: 'two' },
        { toolCalls: [{ name: 'compact_history', arguments: { target: 'conversation', strategy: 'summarize', keep_recent: 0 } }] },
        { text: 'after' },
      ]),
      {
        summarize: async (): Promise<LLMResponse> => ({
          message: { role: 'assistant', content: summary },
          usage: null,
          finishReason: 'stop',
        }),
      },
    );
    // The floor off: these turns use a few % of the window.
    const session = await newSession({ llm, settings: { injectHistory: true, compactHistoryFloor: 0 } });
    const events = collect(session);
    for (const p of ['a', 'b', 'compact now', 'next']) await session.prompt(`${p}: ${'context '.repeat(100)}`);
    const last = textOf(llm.requests.at(-1)!);
    expect(ofType(events, 'tool_end')[0]!.content).toMatch(/^Compacted/);
    expect(last).toContain('## Progress');
    expectNeutralised(last);
    await session.close();
  });
});

describe('overview.md read by descriptor', () => {
  it('a planted symlink is refused with a clear error; its target never reaches the model', async () => {
    const home = tempHome();
    const llm = replying([]);
    const session = await newSession({ llm, home });
    const outside = join(home, 'outside.txt');
    writeFileSync(outside, 'OUTSIDE-SECRET-1234\n');
    const overview = join(session.dir, 'working-memory', 'overview.md');
    unlinkSync(overview);
    symlinkSync(outside, overview);
    const result = await session.prompt('hello');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/overview\.md is a symlink/);
    for (const request of llm.requests) expect(JSON.stringify(request)).not.toContain('OUTSIDE-SECRET');
    await session.close();
  });

  it('a 1 GiB overview.md placed by hand is refused by its size, naming the file, the size and the limit', async () => {
    const session = await newSession({ llm: replying([]) });
    truncateSync(join(session.dir, 'working-memory', 'overview.md'), 1024 ** 3);
    const result = await session.prompt('hello');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/working-memory\/overview\.md is 1024\.0 MB; .*at most 1\.0 MB/);
    await session.close();
  });
});

describe('reads while a folder is swapped for a symlink', () => {
  it('return the inside file or an error, never a byte from outside', async () => {
    const race = await raceReads(1500);
    expect(race.outside).toBe(0);
    expect(race.inside).toBeGreaterThan(0);
  });
});

describe('writes while a folder is swapped for a symlink', () => {
  it('land inside or are refused, never outside', async () => {
    const race = await raceWrites(1500);
    expect(race.outside).toBe(0);
    expect(race.inside).toBeGreaterThan(0);
  });
});
