import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { defineTool } from '../../src/tools/tool.js';
import { collect, independentCount, newSession, ofType } from '../helpers.js';
import { logOf, memoryFileOf, storesUnderTest } from '../storage/stores.js';

const WINDOW = 6000;
const RESERVE = 300;

const fetchPage = defineTool({
  name: 'fetch_page',
  description: 'Fetch a page of the manual',
  parameters: z.object({ page: z.number().int() }),
  execute: ({ page }) => `Page ${page}: ` + Array.from({ length: 45 }, (_, i) => `line ${page}.${i} of the manual`).join('; '),
});

describe.each(storesUnderTest('compaction loop'))('compaction at the threshold ($name store)', (store) => {
  it('a tool loop compacts mid-loop when it crosses 75 %, and no request ever exceeds the window', async () => {
    // Five earlier turns of chat, then one turn that fetches eight large pages in a row.
    const replies = [
      ...Array.from({ length: 5 }, (_, t) => ({ text: `Reply ${t}: ` + 'details '.repeat(300) })),
      ...Array.from({ length: 8 }, (_, p) => ({ toolCalls: [{ name: 'fetch_page', arguments: { page: p + 1 } }] })),
      { text: 'Read all eight pages.' },
    ];
    const llm = scriptedModel(replies, { contextWindow: WINDOW, maxOutputTokens: RESERVE });
    const session = await newSession({ ...store.fresh(), llm, tools: [fetchPage], settings: { injectHistory: true } });
    const events = collect(session);
    for (let t = 0; t < 5; t++) await session.prompt(`Earlier question ${t}`);
    const result = await session.prompt('Read the manual, pages 1 to 8.');
    expect(result.status).toBe('done');
    expect(result.requests).toBe(9);

    // Compaction happened inside the looping turn (turn 6), before later requests of it, and
    // went well below the line (to 50 %) so that it did not fire again at once: first the
    // five earlier turns were archived, later the active turn's oldest tool outputs stubbed.
    const inLoop = ofType(events, 'compaction_end').filter((e) => e.turn === 6);
    const effective = inLoop.filter((e) => e.replaced > 0);
    expect(effective.length).toBeGreaterThanOrEqual(1);
    expect(effective[0]).toMatchObject({ reason: 'fallback', request: 5 });
    expect(effective[0]!.replaced).toBeGreaterThanOrEqual(10);
    for (const e of effective) expect(e.tokensAfter).toBeLessThan(e.tokensBefore);
    const gaps = effective.slice(1).map((e, i) => e.request - effective[i]!.request);
    expect(gaps.every((g) => g >= 3)).toBe(true);
    const starts = ofType(events, 'compaction_start').filter((e) => e.turn === 6);
    expect(starts.map((e) => e.request)).toEqual(inLoop.map((e) => e.request));
    const stubbed = (await logOf(session)).flatMap((e) => (e.type === 'compaction' ? (e.stubs ?? []) : []));
    for (const stub of stubbed) expect(stub.content).toMatch(/^\[Tool output moved to working-memory\/detail\/compact-.*\.md \(call_/);

    // Every request stayed inside the window, by our count and by an independent one, and
    // every request after a compaction is below the 75 % line again.
    for (const request of llm.requests) {
      expect(independentCount(request) + RESERVE).toBeLessThanOrEqual(WINDOW);
    }
    for (const built of ofType(events, 'prompt_built')) expect(built.tokens.total + RESERVE).toBeLessThanOrEqual(WINDOW);
    for (const end of effective) {
      const next = ofType(events, 'prompt_built').find((b) => b.turn === 6 && b.request === end.request)!;
      expect(next.tokens.total).toBeLessThan(0.75 * WINDOW);
    }

    // Lossless: the archived turns are verbatim in detail/, and the log still has every message.
    const log = await logOf(session);
    const compactions = log.filter((e) => e.type === 'compaction');
    const archived = compactions.flatMap((c) => (c.type === 'compaction' ? c.files : []));
    const text = (await Promise.all(archived.map((f) => memoryFileOf(session, f)))).join('\n');
    for (let t = 0; t < 5; t++) {
      const inLog = log.some((e) => e.type === 'message' && e.message.content === `Earlier question ${t}`);
      expect(inLog).toBe(true);
    }
    expect(text).toContain('Earlier question 0');
    expect(text).toContain(`Reply 0: ${'details '.repeat(300)}`.trimEnd());
    // The looping turn itself was never archived: its user message is in every request of it.
    for (const request of llm.requests.slice(5)) {
      expect(request.messages.some((m) => m.role === 'user' && m.content!.startsWith('Read the manual, pages 1 to 8.'))).toBe(true);
    }
    await session.close();
  });

  it('a request that cannot fit even after compaction fails with a clear error instead of being sent', async () => {
    const huge = defineTool({
      name: 'dump',
      description: 'Dump everything',
      parameters: z.object({}),
      execute: () => 'x '.repeat(5000),
    });
    const llm = scriptedModel([{ toolCalls: [{ name: 'dump', arguments: {} }] }, { text: 'never sent' }], {
      contextWindow: WINDOW,
      maxOutputTokens: RESERVE,
    });
    const session = await newSession({ ...store.fresh(), llm, tools: [huge] });
    const events = collect(session);
    const result = await session.prompt('Dump it.');
    expect(result.status).toBe('failed');
    expect(result.error?.kind).toBe('window');
    expect(result.error?.message).toMatch(/more than the 6000-token window/);
    expect(llm.requests).toHaveLength(1);
    expect(ofType(events, 'error').at(-1)).toMatchObject({ fatal: true });
    // The session is still usable.
    await session.close();
  });
});
