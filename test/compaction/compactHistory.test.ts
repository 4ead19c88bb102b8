import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { LLM, LLMRequest, LLMResponse } from '../../src/llm/llm.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { modelSummarizer, SUMMARIZER_MARK } from '../../src/compaction/summarizer.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { defineTool } from '../../src/tools/tool.js';
import { fromItems } from '../../src/history/historyView.js';
import { collect, newSession, ofType, splitTail } from '../helpers.js';
import { logOf, memoryFileOf, storesUnderTest } from '../storage/stores.js';

const stores = storesUnderTest('compact_history');

/** These conversations use a few % of the window: the floor off, so that compact_history compacts them. */
const PHASE1 = { injectHistory: true, compactHistoryFloor: 0 };

const compact = (args: Record<string, unknown>): ScriptedReply => ({ toolCalls: [{ name: 'compact_history', arguments: args }] });
const SUMMARY =
  '## Goal\n- Plan a trip.\n\n## Decisions\n- Train, not plane.\n\n## Progress\n- Dates chosen.\n\n## Open items\n- Hotel.\n\n## Key facts\n- city: Lyon';

/** A scripted model whose summaries come from `summarize` (or fail). */
function withSummaries<T extends LLM>(llm: T, summary: string | Error | (() => string)): T & { summaryRequests: LLMRequest[] } {
  const summaryRequests: LLMRequest[] = [];
  return Object.assign(llm, {
    summaryRequests,
    summarize: async (request: LLMRequest): Promise<LLMResponse> => {
      summaryRequests.push(request);
      if (summary instanceof Error) throw summary;
      return {
        message: { role: 'assistant', content: typeof summary === 'function' ? summary() : summary },
        usage: null,
        finishReason: 'stop',
      };
    },
  });
}

async function chatTurns(session: Awaited<ReturnType<typeof newSession>>, n: number) {
  for (let i = 1; i <= n; i++) await session.prompt(`Question ${i}: ${'context '.repeat(100)}`);
}

describe.each(stores)('compact_history ($name store)', (store) => {
  it('archive: old turns go verbatim to detail/compact-<time>.md; the result says what, where, tokens before and after, and asks for a memory update', async () => {
    const replies: ScriptedReply[] = [
      ...Array.from({ length: 6 }, (_, i) => ({ text: `Answer ${i + 1}.` })),
      compact({ target: 'conversation', keep_recent: 2 }),
      { text: 'Compacted.' },
      { text: 'Next.' },
    ];
    const llm = scriptedModel(replies);
    const session = await newSession({ ...store.fresh(), llm, settings: PHASE1 });
    const events = collect(session);
    await chatTurns(session, 6);
    await session.prompt('Please compact.');
    const result = ofType(events, 'tool_end')[0]!;
    expect(result.isError).toBe(false);
    expect(result.content).toMatch(
      /^Compacted turns 1-4: 8 messages archived verbatim to working-memory\/detail\/compact-[\dT-]+Z\.md and replaced by a short note\./,
    );
    // Tokens before and after, and the request's share of the window, as <context_meta> gives it.
    const history = /History: ([\d,]+) → ([\d,]+) tokens; the request now uses (\d+) % of the ([\d,]+)-token window\./.exec(result.content);
    expect(history).not.toBeNull();
    const [, before, after, share, window] = history!.map((n) => n.replaceAll(',', ''));
    expect(Number(after)).toBeLessThan(Number(before));
    expect(Number(window)).toBe(session.model.contextWindow);
    expect(result.content).toContain('Now update working-memory/overview.md');
    expect(ofType(events, 'compaction_end')).toEqual([
      expect.objectContaining({ reason: 'llm', replaced: 8, tokensBefore: Number(before), tokensAfter: Number(after) }),
    ]);

    const file = /(working-memory\/detail\/compact-[^ ]+\.md)/.exec(result.content)![1]!;
    const archive = await memoryFileOf(session, file);
    expect(archive).toMatch(/^# Archived conversation, turns 1-4/);
    for (let i = 1; i <= 4; i++) expect(archive).toContain(`Question ${i}: ${'context '.repeat(100).trimEnd()}`);
    expect(archive).not.toContain('Question 5');

    // The next request: turns 1-4 replaced by one note; turns 5-6 and this turn intact; a reminder is due at once.
    await session.prompt('Go on.');
    const next = llm.requests.at(-1)!;
    const users = next.messages.filter((m) => m.role === 'user').map((m) => m.content!.split('\n\n<context_meta>')[0]!);
    expect(users[0]).toMatch(
      /^\[Earlier conversation compacted: turns 1-4 \(8 messages, \d+ tokens\) were archived verbatim to working-memory\/detail\/compact-/,
    );
    expect(users.slice(1, 3).map((u) => u.slice(0, 11))).toEqual(['Question 5:', 'Question 6:']);
    // The very next request (the second of the compacting turn) carried the reminder.
    const afterCompaction = llm.requests[7]!;
    expect(splitTail(afterCompaction.messages.at(-1)!.content!).reminder).toContain('The history was just compacted');
    // The share the result gave is the one that request showed (give or take the tool result and the tail).
    expect(Math.abs(splitTail(afterCompaction.messages.at(-1)!.content!).meta.tokens_percent! - Number(share))).toBeLessThanOrEqual(2);
    expect(ofType(events, 'reminder').find((r) => r.turn === 7 && r.request === 2)).toMatchObject({ reason: 'compaction' });
    // Nothing was deleted from the log.
    expect((await logOf(session)).filter((e) => e.type === 'message')).toHaveLength(6 * 2 + 4 + 2);
    await session.close();
  });

  it('summarize: a structured summary replaces the turns, and the verbatim text is archived too', async () => {
    const llm = withSummaries(
      scriptedModel([
        ...Array.from({ length: 5 }, () => ({ text: 'ok' })),
        compact({ target: 'conversation', strategy: 'summarize', keep_recent: 1 }),
        { text: 'done' },
        { text: 'x' },
      ]),
      SUMMARY,
    );
    const session = await newSession({ ...store.fresh(), llm, settings: PHASE1 });
    const events = collect(session);
    await chatTurns(session, 5);
    await session.prompt('Summarise the old part.');
    expect(ofType(events, 'tool_end')[0]!.content).toContain('replaced by a structured summary');
    expect(llm.summaryRequests).toHaveLength(1);
    expect(llm.summaryRequests[0]!.messages[0]!.content).toContain(SUMMARIZER_MARK);
    expect(llm.summaryRequests[0]!.messages[1]!.content).toContain('Question 1:');
    await session.prompt('And now?');
    const note = llm.requests.at(-1)!.messages[1]!.content!;
    expect(note).toMatch(
      /^\[Earlier conversation compacted: summary of turns 1-4 \(8 messages\); the messages themselves are verbatim in working-memory\/detail\/compact-/,
    );
    for (const section of ['## Goal', '## Decisions', '## Progress', '## Open items', '## Key facts']) expect(note).toContain(section);
    const archive = await memoryFileOf(session, ofType(events, 'compaction_end')[0]!.files[0]!);
    expect(archive).toContain('Question 4:');
    await session.close();
  });

  it('summarize falls back to archive when the summarizer fails, returns nothing, or there is none', async () => {
    for (const summary of [new Error('summarizer down'), '', 'not a structured summary'] as const) {
      const llm = withSummaries(
        scriptedModel([
          ...Array.from({ length: 4 }, () => ({ text: 'ok' })),
          compact({ target: 'conversation', strategy: 'summarize', keep_recent: 1 }),
          { text: 'done' },
        ]),
        summary,
      );
      const session = await newSession({ ...store.fresh(), llm, settings: PHASE1 });
      const events = collect(session);
      await chatTurns(session, 4);
      await session.prompt('Compact.');
      expect(ofType(events, 'tool_end')[0]!.content).toContain('The summarizer failed, so the turns were archived verbatim instead.');
      expect(session.history.items[0]!.message.content).toMatch(/were archived verbatim to/);
      await session.close();
    }
    const plain = scriptedModel([
      ...Array.from({ length: 3 }, () => ({ text: 'ok' })),
      compact({ target: 'all', strategy: 'summarize', keep_recent: 1 }),
      { text: 'done' },
    ]);
    const session = await newSession({ ...store.fresh(), llm: plain, settings: PHASE1 });
    const events = collect(session);
    await chatTurns(session, 3);
    await session.prompt('Compact.');
    expect(ofType(events, 'tool_end')[0]!.content).toContain('No summarizer is configured');
    await session.close();
  });

  it('tools: old tool outputs become one-line stubs naming where they went; recent ones stay', async () => {
    const replies = fetching(4);
    replies.push(compact({ target: 'tools', keep_recent: 1 }), { text: 'Compacted tools.' });
    const llm = scriptedModel(replies);
    const session = await newSession({ ...store.fresh(), llm, tools: [fetch], settings: PHASE1 });
    const events = collect(session);
    for (let n = 1; n <= 4; n++) await session.prompt(`Fetch ${n}.`);
    await session.prompt('Compact the tool outputs.');
    const tools = session.history.items
      .slice(0, session.history.length)
      .filter((i) => i.message.role === 'tool')
      .map((i) => i.message.content!);
    // Fetch 1-3 stubbed, fetch 4 kept; the compact_history result itself stays.
    expect(
      tools
        .slice(0, 3)
        .every((t) =>
          /^\[Tool output moved to working-memory\/detail\/compact-.*\.md \(call_\d+_0, 1\.\d KB, 1 line\)\. Read it there if you need it\.\]$/.test(
            t,
          ),
        ),
    ).toBe(true);
    expect(tools[3]).toMatch(/^Result 4: data/);
    const file = ofType(events, 'compaction_end')[0]!.files[0]!;
    const archive = await memoryFileOf(session, file);
    for (let n = 1; n <= 3; n++) expect(archive).toContain(`Result ${n}: ${'data '.repeat(300).trimEnd()}`);
    expect(ofType(events, 'tool_end').at(-1)!.content).toContain('Moved 3 tool outputs');
    // Only archive was asked: nothing is said about summaries.
    expect(ofType(events, 'tool_end').at(-1)!.content).not.toMatch(/summar/i);
    await session.close();
  });

  it('tools + summarize: the result says the outputs were stubbed, not summarised', async () => {
    const replies = fetching(3);
    replies.push(compact({ target: 'tools', strategy: 'summarize', keep_recent: 1 }), { text: 'Compacted tools.' });
    const llm = withSummaries(scriptedModel(replies), SUMMARY);
    const session = await newSession({ ...store.fresh(), llm, tools: [fetch], settings: PHASE1 });
    const events = collect(session);
    for (let n = 1; n <= 3; n++) await session.prompt(`Fetch ${n}.`);
    await session.prompt('Compact the tool outputs.');
    const result = ofType(events, 'tool_end').at(-1)!.content;
    expect(result).toContain('Moved 2 tool outputs');
    expect(result).toContain(
      'Tool outputs are not summarised: strategy "summarize" applies to conversation turns, so each output was moved verbatim and replaced by a one-line stub instead.',
    );
    expect(llm.summaryRequests).toEqual([]);
    await session.close();
  });

  it('archive_to: inside detail/ or archive/ only; a second archive to the same file is appended, never overwritten', async () => {
    const llm = scriptedModel([
      ...Array.from({ length: 4 }, () => ({ text: 'ok' })),
      compact({ target: 'conversation', keep_recent: 2, archive_to: 'working-memory/detail/session-summary.md' }),
      { text: 'one' },
      ...Array.from({ length: 3 }, () => ({ text: 'ok' })),
      compact({ target: 'conversation', keep_recent: 2, archive_to: 'detail/session-summary.md' }),
      compact({ target: 'conversation', archive_to: 'working-memory/notes.md' }),
      compact({ target: 'conversation', archive_to: '../../meta.json' }),
      compact({ target: 'conversation', archive_to: '/tmp/x.md' }),
      compact({ target: 'conversation', archive_to: 'detail' }),
      { text: 'two' },
    ]);
    const session = await newSession({ ...store.fresh(), llm, settings: PHASE1 });
    const events = collect(session);
    await chatTurns(session, 4);
    await session.prompt('Archive to the summary file.');
    await chatTurns(session, 3);
    await session.prompt('Again, and some bad targets.');
    const results = ofType(events, 'tool_end').map((r) => r.content);
    expect(results[0]).toContain('working-memory/detail/session-summary.md');
    expect(results[1]).toContain('working-memory/detail/session-summary.md');
    expect(results[2]).toMatch(/archive_to must be inside working-memory\/detail\/ or working-memory\/archive\//);
    expect(results[3]).toMatch(/archive_to refused: path .* leaves working-memory/);
    expect(results[4]).toMatch(/archive_to refused: absolute path/);
    expect(results[5]).toMatch(/archive_to (must be inside|refused)/);
    const text = await memoryFileOf(session, 'working-memory/detail/session-summary.md');
    expect(text.match(/^# Archived conversation/gm)).toHaveLength(2);
    expect(text).toContain('Question 1:');
    expect(text).toContain('Archive to the summary file.'); // turn 5, archived by the second call
    await session.close();
  });

  it('bad arguments and nothing to compact get clear results; the session stays consistent', async () => {
    const llm = scriptedModel([
      { text: 'ok' },
      compact({ target: 'everything' }),
      compact({ target: 'conversation', strategy: 'shred' }),
      compact({ target: 'conversation', keep_recent: -1 }),
      compact({ target: 'conversation', keep_recent: 1e9 }),
      compact({ target: 'conversation', keep_recent: 50 }),
      compact({ target: 'tools' }),
      { text: 'fine' },
    ]);
    const session = await newSession({ ...store.fresh(), llm, settings: { compactHistoryFloor: 0 } });
    const events = collect(session);
    await session.prompt('one');
    await session.prompt('try bad compactions');
    const results = ofType(events, 'tool_end');
    expect(results.slice(0, 4).map((r) => r.isError)).toEqual([true, true, true, true]);
    expect(results[0]!.content).toMatch(/invalid arguments for compact_history[\s\S]*target/);
    expect(results[1]!.content).toMatch(/strategy/);
    expect(results[2]!.content).toMatch(/keep_recent/);
    expect(results[3]!.content).toMatch(/keep_recent/);
    expect(results[4]).toMatchObject({
      isError: false,
      content: expect.stringMatching(/^Nothing to compact: there are no turns before the last 50\./),
    });
    expect(results[5]!.content).toMatch(/^Nothing to compact: there are no tool outputs/);
    // The two valid calls are reported as compactions that replaced nothing; the log has none.
    expect(ofType(events, 'compaction_end').map((e) => [e.reason, e.replaced])).toEqual([
      ['llm', 0],
      ['llm', 0],
    ]);
    expect((await logOf(session)).filter((e) => e.type === 'compaction')).toEqual([]);
    await session.close();
  });
});

describe.each(stores)('tool output cap at capture ($name store)', (store) => {
  it('an output over 2000 lines reaches the model truncated with a note and a path; the full output is in detail/', async () => {
    const big = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`).join('\n');
    const wide = 'x'.repeat(80 * 1024);
    const dump = defineTool({
      name: 'dump',
      description: 'Dump',
      parameters: z.object({ wide: z.boolean() }),
      execute: ({ wide: w }) => (w ? wide : big),
    });
    const llm = scriptedModel([
      { toolCalls: [{ name: 'dump', arguments: { wide: false } }] },
      { toolCalls: [{ name: 'dump', arguments: { wide: true } }] },
      { text: 'seen' },
    ]);
    const session = await newSession({ ...store.fresh(), llm, tools: [dump] });
    const events = collect(session);
    await session.prompt('Dump twice.');
    const [lines, bytes] = ofType(events, 'tool_end').map((e) => e.content);
    expect(lines!.split('\n').slice(0, 2000).at(-1)).toBe('line 2000');
    expect(lines).not.toContain('line 2001');
    const note =
      /\[Output truncated \(lines 1-2000 of 3000, [\d.]+ KB of [\d.]+ KB\)\. The full output is in (working-memory\/detail\/tool-outputs\/1-turn1\.txt); read it with the read tool \(offset\/limit\)\.\]$/.exec(
        lines!,
      );
    expect(note).not.toBeNull();
    expect(await memoryFileOf(session, note![1]!)).toBe(big);
    expect(Buffer.byteLength(bytes!)).toBeLessThan(52 * 1024);
    expect(bytes).toMatch(/of 80\.0 KB\)\. The full output is in working-memory\/detail\/tool-outputs\/2-turn1\.txt/);
    // The stored history holds the capped text, not the full one.
    expect((await logOf(session)).every((e) => e.type !== 'message' || (e.message.content ?? '').length < 60 * 1024)).toBe(true);
    // The index shows one stable line for all captured outputs: in the memory block, or (the block held
    // as the turn's first request sent it, memoryRefresh 'when-cheap') in the tail's update.
    const sent = llm.requests.at(-1)!.messages;
    const shown = `${sent[0]!.content!}\n${sent.at(-1)!.content ?? ''}`;
    expect(shown).toContain('- working-memory/detail/tool-outputs/: full outputs of large tool results');
    expect(shown).not.toContain('1-turn1.txt');
    await session.close();
  });
});

describe.each(stores)('compaction policy ($name store)', (store) => {
  const fetch = defineTool({
    name: 'fetch',
    description: 'Fetch',
    parameters: z.object({ n: z.number() }),
    execute: ({ n }) => `Page ${n}: ${'words '.repeat(150)}`,
  });
  const script = () =>
    scriptedModel(
      (request) => {
        const last = request.messages.at(-1)!;
        const n = request.messages.length;
        return last.role === 'user'
          ? {
              toolCalls: [
                { name: 'fetch', arguments: { n } },
                { name: 'fetch', arguments: { n: n + 1 } },
              ],
            }
          : { text: 'Read it.' };
      },
      { contextWindow: 8000, maxOutputTokens: 300 },
    );

  it('"auto": the system compacts at the guide\'s tiers for a model that never does; "llm": only the fallback, never at 20-60 %', async () => {
    const auto = script();
    const settings = { injectHistory: true, compaction: 'auto' } as const;
    const session = await newSession({ ...store.fresh(), llm: auto, tools: [fetch], settings });
    const events = collect(session);
    for (let t = 0; t < 14; t++) await session.prompt(`Fetch page ${t}.`);
    const autoCompactions = ofType(events, 'compaction_end').filter((e) => e.reason === 'auto');
    expect(autoCompactions.length).toBeGreaterThan(0);
    expect(ofType(events, 'compaction_end').filter((e) => e.reason === 'fallback')).toEqual([]);
    const log = (await logOf(session)).filter((e) => e.type === 'compaction');
    expect(log.some((e) => e.type === 'compaction' && e.target === 'tools' && (e.stubs?.length ?? 0) > 0)).toBe(true);
    await session.close();

    const llmMode = script();
    const other = await newSession({ ...store.fresh(), llm: llmMode, tools: [fetch], settings: PHASE1 });
    const otherEvents = collect(other);
    for (let t = 0; t < 14; t++) await other.prompt(`Fetch page ${t}.`);
    expect(ofType(otherEvents, 'compaction_end').every((e) => e.reason === 'fallback')).toBe(true);
    // The fallback decides on the percentage the request shows the model (rounded): 75 % or more. The event
    // counts the history compacted; the rest of that request is what the request rebuilt after it sends besides its history.
    const starts = ofType(otherEvents, 'compaction_start');
    expect(starts.length).toBeGreaterThan(0);
    for (const start of starts) {
      const rebuilt = ofType(otherEvents, 'prompt_built').find((p) => p.turn === start.turn && p.request === start.request)!;
      expect(Math.round(((start.tokensBefore + rebuilt.tokens.total - rebuilt.tokens.history) / 8000) * 100)).toBeGreaterThanOrEqual(75);
    }
    await other.close();
  });
});

/** A host tool whose outputs are large enough to be worth compacting. */
const fetch = defineTool({
  name: 'fetch',
  description: 'Fetch',
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => `Result ${n}: ${'data '.repeat(300)}`,
});

/** Replies that call fetch `count` times, each answered. */
function fetching(count: number): ScriptedReply[] {
  const replies: ScriptedReply[] = [];
  for (let n = 1; n <= count; n++) replies.push({ toolCalls: [{ name: 'fetch', arguments: { n } }] }, { text: `Fetched ${n}.` });
  return replies;
}

describe('summarizer', () => {
  it('chunks its input so that no summary request exceeds the window, then combines', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const window = 4000;
    const seen: number[] = [];
    const llm = withSummaries(scriptedModel([]), () => SUMMARY);
    const original = llm.summarize!;
    llm.summarize = async (request, options) => {
      seen.push(counter.request(request.messages, request.tools) + request.maxOutputTokens);
      return original(request, options);
    };
    const summarize = modelSummarizer({ llm, counter, contextWindow: window })!;
    const items = Array.from({ length: 40 }, (_, i) => {
      const message = { role: 'user' as const, content: `Message ${i}: ${'long text '.repeat(i === 7 ? 5000 : 120)}` };
      return { seq: i + 1, turn: i + 1, message, tokens: counter.message(message) };
    });
    expect(fromItems(items).cum.at(-1)).toBeGreaterThan(4 * window);
    const summary = await summarize(items, new AbortController().signal);
    expect(summary).toBe(SUMMARY);
    expect(seen.length).toBeGreaterThan(3);
    expect(Math.max(...seen)).toBeLessThanOrEqual(window);
  });
});
