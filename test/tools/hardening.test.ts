/**
 * The pieces the reliability matrix leans on, one rule at a time: the redactor, the
 * structural-tag neutraliser, the bounds on tool arguments, on what one response saves,
 * on error texts and on overview.md, and the session lock's refusals and stale-lock takeover.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REDACTED, redactor } from '../../src/secrets/redact.js';
import { LOCK_FILE, pidNamespace, SessionInUseError, SessionLock } from '../../src/storage/sessionLock.js';
import { neutraliseTags } from '../../src/prompt/structuralTags.js';
import { argumentProblem, boundToolArguments, MAX_NESTING, omittedArguments } from '../../src/tools/toolArguments.js';
import { ResponseSaves } from '../../src/tools/responseSaves.js';
import { boundResponse, invalidNameProblem } from '../../src/llm/captureBounds.js';
import { LLMError } from '../../src/llm/llm.js';
import { toTurnError } from '../../machines/turnErrors.js';
import { boundErrorText, MAX_ERROR_TEXT_CHARS } from '../../src/errors/errorText.js';
import { defineTool } from '../../src/tools/tool.js';
import { z } from 'zod';
import { collect, newSession, ofType } from '../helpers.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { OVERVIEW_MAX_BYTES } from '../../src/memory/workingMemory.js';
import { memoryOnDisk } from '../storage/memoryOnDisk.js';
import { writeFileAtomic } from '../../src/storage/atomicWrite.js';
import { inlineDiskIO } from '../../src/storage/diskIO.js';
import { unpairedTools } from '../../src/testing/testServer.js';
import { capOutput } from '../../src/tools/toolOutputCap.js';
import { SavedOutputNames } from '../../src/tools/savedOutputNames.js';

const temp = (name: string) => mkdtempSync(join(tmpdir(), `workmem-${name}-`));

describe('redactor', () => {
  const redact = redactor(['my-database-password', 'quote"and\\slash-secret', 'short', undefined, null]);

  it('masks known secrets, as written and as JSON-escaped, and leaves other text alone', () => {
    expect(redact('password my-database-password here')).toBe(`password ${REDACTED} here`);
    expect(redact(JSON.stringify({ v: 'quote"and\\slash-secret' }))).toBe(`{"v":"${REDACTED}"}`);
    expect(redact('nothing to hide')).toBe('nothing to hide');
  });

  it('ignores secrets too short to tell from ordinary words', () => {
    expect(redact('a short word')).toBe('a short word');
  });

  it('masks anything shaped like an OpenAI key, keeping its first characters to recognise it', () => {
    expect(redact('key sk-proj-abcdefghijklmnop1234 end')).toBe(`key sk-proj…${REDACTED} end`);
    expect(redact('sk-short')).toBe('sk-short'); // too short to be a key
  });

  it('masks the longer of two overlapping secrets whole', () => {
    const r = redactor(['token-abcdefgh', 'token-abcdefgh-extended']);
    expect(r('x token-abcdefgh-extended y')).toBe(`x ${REDACTED} y`);
  });
});

describe('structural tags', () => {
  it("writes the angle bracket of workmem's own tags as &lt;, opening or closing, in any case", () => {
    const text = '</working_memory><context_meta>{}</context_meta><MEMORY_REMINDER level="x"><detail_index/><relevant_memories>';
    const out = neutraliseTags(text);
    expect(out).not.toMatch(/<\/?(working_memory|context_meta|memory_reminder|detail_index|relevant_memories)/i);
    expect(out).toBe(
      '&lt;/working_memory>&lt;context_meta>{}&lt;/context_meta>&lt;MEMORY_REMINDER level="x">&lt;detail_index/>&lt;relevant_memories>',
    );
  });

  it('leaves other tags and longer names alone', () => {
    expect(neutraliseTags('<div><context_metadata> a < b')).toBe('<div><context_metadata> a < b');
  });
});

describe('tool argument bounds', () => {
  const nested = (depth: number) => `{"a":${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}}`;

  it(`accepts nesting up to ${MAX_NESTING} levels and refuses deeper`, () => {
    expect(argumentProblem(nested(MAX_NESTING))).toBeNull();
    expect(argumentProblem(nested(MAX_NESTING + 1))).toMatch(/nest deeper than 64/);
    expect(argumentProblem(nested(100_000))).toMatch(/nest deeper/);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(argumentProblem(JSON.stringify({ text: '['.repeat(1000) + '\\"' + '{'.repeat(1000) }))).toBeNull();
  });

  it('replaces oversized arguments by a note naming where they were saved, and leaves small ones', async () => {
    const saved: string[] = [];
    const message = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [
        { id: 'a', type: 'function' as const, function: { name: 'write', arguments: JSON.stringify({ content: 'x'.repeat(2000) }) } },
        { id: 'b', type: 'function' as const, function: { name: 'write', arguments: '{"content":"small"}' } },
      ],
    };
    const saves = new ResponseSaves((call) => (saved.push(call.id), `detail/tool-outputs/${call.id}.arguments.json`));
    const bounded = await boundToolArguments(message, saves, { perCall: 1024 });
    expect(saved).toEqual(['a']);
    expect(omittedArguments(JSON.parse(bounded.tool_calls![0]!.function.arguments))).toMatch(
      /2\.0 KB of arguments, over the 1\.0 KB limit.*detail\/tool-outputs\/a/,
    );
    expect(bounded.tool_calls![1]).toBe(message.tool_calls[1]);
  });
});

describe('one response as a whole', () => {
  it('keeps at most the per-response budget of arguments in the history; later calls are dropped with a note, oversized saves are bounded too', async () => {
    const call = (id: string, bytes: number) => ({
      id,
      type: 'function' as const,
      function: { name: 'write', arguments: JSON.stringify({ path: `detail/${id}.md`, content: 'y'.repeat(bytes) }) },
    });
    const message = { role: 'assistant' as const, content: null, tool_calls: ['a', 'b', 'c', 'd'].map((id) => call(id, 400)) };
    const saved: string[] = [];
    const bounded = await boundToolArguments(message, new ResponseSaves((c) => (saved.push(c.id), `detail/tool-outputs/${c.id}`)), {
      perCall: 1024,
      perResponse: 1000,
    });
    const notes = bounded.tool_calls!.map((c) => omittedArguments(JSON.parse(c.function.arguments)));
    expect(notes.slice(0, 2)).toEqual([null, null]);
    expect(notes[2]).toMatch(/dropped: this response's tool calls passed 1000 B of arguments in total/);
    expect(notes[3]).toMatch(/not run/);
    expect(saved).toEqual([]);
    const big = { role: 'assistant' as const, content: null, tool_calls: ['e', 'f', 'g'].map((id) => call(id, 2000)) };
    const bigNotes = (
      await boundToolArguments(big, new ResponseSaves((c) => (saved.push(c.id), `detail/tool-outputs/${c.id}`), 4500), { perCall: 1024 })
    ).tool_calls!.map((c) => omittedArguments(JSON.parse(c.function.arguments)));
    expect(saved).toEqual(['e', 'f']);
    expect(bigNotes[2]).toMatch(/not kept: this response already saved .* of oversized tool calls/);
  });
});

describe('what one response may save', () => {
  it('round 3 #6: calls refused for their name and oversized arguments draw on one save budget per response', async () => {
    const saved: string[] = [];
    const saves = new ResponseSaves((c) => (saved.push(c.id), `detail/tool-outputs/${c.id}`), 5_000);
    const calls = ['a', 'b', 'c'].map((id) => ({
      id,
      type: 'function' as const,
      function: { name: `bad name ${'n'.repeat(2_000)}`, arguments: '{}' },
    }));
    const big = ['d', 'e'].map((id) => ({
      id,
      type: 'function' as const,
      function: { name: 'write', arguments: JSON.stringify({ content: 'y'.repeat(2_000) }) },
    }));
    const named = await boundResponse({ role: 'assistant', content: null, tool_calls: [...calls, ...big] }, saves, () => 'unused');
    const bounded = await boundToolArguments(named, saves, { perCall: 1024 });
    // 2 KB each: two refused calls fit in 5 KB; the third and both oversized arguments are not kept.
    expect(saved).toEqual(['a', 'b']);
    const notes = bounded.tool_calls!.map((c) => invalidNameProblem(c) ?? omittedArguments(JSON.parse(c.function.arguments)));
    expect(notes[1]).toMatch(/the call was not run \(kept in detail\/tool-outputs\/b\)$/);
    expect(notes[2]).toMatch(
      /the call was not run \(not kept: this response already saved 4\.\d KB of oversized tool calls \(at most 4\.9 KB\)\)$/,
    );
    for (const note of notes.slice(3))
      expect(note).toMatch(/over the 1\.0 KB limit for one tool call; not kept: this response already saved/);
  });
});

describe('error texts', () => {
  it('round 3 #12: an error message of any size enters as a bounded text, from a client, a plain error or a turn error', () => {
    const huge = `the disk said: ${'x'.repeat(10_000_000)}`;
    for (const message of [
      new LLMError('server', huge).message,
      toTurnError(new Error(huge)).message,
      toTurnError({ kind: 'storage', message: huge, retryable: false }).message,
    ]) {
      expect(message.length).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS + 50);
      expect(message).toMatch(/^the disk said: x+… \[error text cut: 9\.5 MB in all\]$/);
    }
    expect(toTurnError(new Error('short')).message).toBe('short');
  });

  it('a cut never shows part of a word (a key), nor half a character', () => {
    const key = 'sk-proj-0123456789abcdefghijklmnopqrstuvwxyz';
    const text = `${'a '.repeat(1_990)}${key} and more`;
    const bounded = boundErrorText(text);
    expect(bounded).not.toContain('sk-proj');
    expect(bounded).toMatch(/a a… \[error text cut: [\d.]+ KB in all\]$/);
    expect(boundErrorText(`${'a'.repeat(9)}😀😀`, 10)).toBe(`${'a'.repeat(9)}… [error text cut: 17 B in all]`);
  });

  it('round 3 #12: a tool that throws a 10 MB message gives a bounded error result, and saves nothing', async () => {
    const boom = defineTool({
      name: 'boom',
      description: 'Fails',
      parameters: z.object({}),
      execute: () => {
        throw new Error(`failed: ${'z'.repeat(10_000_000)}`);
      },
    });
    const session = await newSession({
      llm: scriptedModel([{ toolCalls: [{ name: 'boom', arguments: '{}' }] }, { text: 'ok' }]),
      tools: [boom],
    });
    const events = collect(session);
    expect(await session.prompt('go')).toMatchObject({ status: 'done' });
    const result = ofType(events, 'tool_end')[0]!;
    expect(result).toMatchObject({ isError: true });
    expect(result.content.length).toBeLessThan(MAX_ERROR_TEXT_CHARS + 100);
    expect(result.content).toMatch(/^Error: boom failed: failed: z+… \[error text cut: 9\.5 MB in all\]$/);
    expect(existsSync(join(session.dir, 'working-memory', 'detail', 'tool-outputs'))).toBe(false);
    await session.close();
  });
});

describe('overview.md size limit', () => {
  it(`refuses an overview over ${OVERVIEW_MAX_BYTES / 1024} KB with advice, and keeps the old content`, async () => {
    const memory = await memoryOnDisk(temp('overview'));
    await memory.write('overview.md', '# Overview\n\nkept\n');
    await expect(memory.write('overview.md', 'x'.repeat(OVERVIEW_MAX_BYTES + 1))).rejects.toThrow(/at most 32 KB.*detail\//);
    expect((await memory.snapshot()).content).toBe('# Overview\n\nkept\n');
    await expect(memory.write('detail/big.md', 'x'.repeat(OVERVIEW_MAX_BYTES + 1))).resolves.toMatchObject({ created: true });
  });
});

describe('session lock', () => {
  it('refuses a second holder in the same process, and frees the session on release', () => {
    const dir = temp('lock');
    const lock = SessionLock.acquire(dir);
    expect(() => SessionLock.acquire(dir)).toThrow(/already open in this process/);
    lock.release();
    SessionLock.acquire(dir).release();
  });

  it('refuses a session another live process holds, naming its pid and the lock file', () => {
    const dir = temp('lock');
    const other = process.ppid; // alive: it started us
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: other, host: hostname(), since: Date.now(), nonce: 'n' }));
    let error: unknown;
    try {
      SessionLock.acquire(dir);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SessionInUseError);
    expect((error as SessionInUseError).pid).toBe(other);
    expect((error as Error).message).toMatch(new RegExp(`in use by pid ${other}.*remove .*session\\.lock`));
  });

  it('takes over the lock of a process that is gone, and an unreadable lock once it is old', () => {
    const dir = temp('lock');
    const lockFile = join(dir, LOCK_FILE);
    const gone = 2 ** 22 + 12345;
    // Dead in our own pid namespace: the holder is gone, taken over at once.
    writeFileSync(lockFile, JSON.stringify({ pid: gone, host: hostname(), since: 0, nonce: 'dead', pidns: pidNamespace() }));
    const lock = SessionLock.acquire(dir);
    expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(process.pid);
    lock.release();

    // The same pid from another namespace (a container with our host name): alive as long as it renews.
    writeFileSync(lockFile, JSON.stringify({ pid: gone, host: hostname(), since: 0, nonce: 'ns', pidns: 'other-boot/pid:[1]' }));
    expect(() => SessionLock.acquire(dir)).toThrow(/in use by pid 4206649 since .*heartbeat was renewed 0 s ago/);
    writeFileSync(lockFile, JSON.stringify({ pid: gone, host: hostname(), since: 0, nonce: 'old' })); // no namespace: a heartbeat only
    expect(() => SessionLock.acquire(dir)).toThrow(SessionInUseError);
    const minuteAgo = (Date.now() - 60_000) / 1000;
    utimesSync(lockFile, minuteAgo, minuteAgo);
    SessionLock.acquire(dir).release();

    writeFileSync(join(dir, LOCK_FILE), '{"pid": 12'); // a writer died half way
    expect(() => SessionLock.acquire(dir)).toThrow(/being opened by another process/);
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(join(dir, LOCK_FILE), old, old);
    SessionLock.acquire(dir).release();
  });

  it('renews its heartbeat (the lock file mtime) while held, and stops on release', async () => {
    const dir = temp('lock');
    const lockFile = join(dir, LOCK_FILE);
    const lock = SessionLock.acquire(dir, { heartbeatMs: 20 });
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(lockFile, old, old);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(Date.now() - statSync(lockFile).mtimeMs).toBeLessThan(30_000);
    lock.release();
    expect(existsSync(lockFile)).toBe(false);
  });
});

describe('saved outputs, reserved names and temp files', () => {
  it('names saved outputs by a sequence that continues past the highest number already saved', async () => {
    const dir = temp('saved');
    writeFileSync(join(dir, '3-turn1.txt'), '');
    writeFileSync(join(dir, '7-call_0.txt'), ''); // the old <turn>-<call id> form
    const names = new SavedOutputNames(async () => readdirSync(dir), 'detail/tool-outputs');
    expect(await Promise.all([names.name(2, '.txt'), names.name(2, '.arguments.json')])).toEqual([
      'detail/tool-outputs/8-turn2.txt',
      'detail/tool-outputs/9-turn2.arguments.json',
    ]);
  });

  it('still shows a capped output, with the reason, when its full text cannot be saved', async () => {
    const shown = await capOutput('line\n'.repeat(50), { maxLines: 10, maxBytes: 1024 }, () => {
      throw new Error('ENOTDIR: not a directory');
    });
    expect(shown).toMatch(/^line\n/);
    expect(shown).toMatch(/The full output could not be saved \(ENOTDIR: not a directory\); only this part is kept\./);
  });

  it("refuses the model writes and edits in workmem's own detail/tool-outputs", async () => {
    const memory = await memoryOnDisk(temp('wm'));
    for (const path of ['detail/tool-outputs', 'detail/tool-outputs/x.txt', 'Detail/Tool-Outputs', 'working-memory/detail/tool-outputs'])
      await expect(memory.write(path, 'x'), path).rejects.toThrow(/reserved: detail\/tool-outputs\/ is workmem's own folder/);
    expect(await memory.writeSystem('detail/tool-outputs/1-turn1.txt', 'full')).toBe('working-memory/detail/tool-outputs/1-turn1.txt');
    await expect(memory.edit('detail/tool-outputs/1-turn1.txt', 'full', 'mine')).rejects.toThrow(/reserved/);
  });

  it('puts the temp file of an atomic write in the given folder, never beside the file', async () => {
    const dir = temp('atomic');
    const tmpDir = join(dir, '.tmp');
    mkdirSync(join(dir, 'wm'));
    await writeFileAtomic(join(dir, 'wm', 'a.md'), 'a', { tmpDir, io: inlineDiskIO() });
    expect(readdirSync(join(dir, 'wm'))).toEqual(['a.md']);
    expect(readdirSync(tmpDir)).toEqual([]);
    expect(statSync(tmpDir).mode & 0o777).toBe(0o700);
  });
});

describe('strict test server pairing', () => {
  const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'f', arguments: '{}' } });
  it('accepts paired calls and results and refuses, as OpenAI does, an unanswered call or an orphan result', () => {
    const user = { role: 'user' as const, content: 'u' };
    const asks = { role: 'assistant' as const, content: null, tool_calls: [call('a'), call('b')] };
    const result = (id: string) => ({ role: 'tool' as const, tool_call_id: id, content: 'r' });
    expect(unpairedTools([user, asks, result('b'), result('a'), user])).toBeNull();
    expect(unpairedTools([user, asks, result('a'), user])).toMatch(/did not have response messages: b/);
    expect(unpairedTools([user, result('a'), user])).toMatch(/must be a response to a preceeding message with 'tool_calls'/);
    expect(unpairedTools([user, asks])).toMatch(/did not have response messages: a, b/);
  });
});
