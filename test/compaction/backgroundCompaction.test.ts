/**
 * Background compaction through a Session: the fallback's summary is prepared while turns go
 * on, and the fallback, when it comes, swaps it in without a model call; a failed summary is
 * tried again later and fails no turn; one the model's own compact_history made unnecessary
 * is dropped; a session closed while one runs loses it and nothing else, and the next open
 * prepares it again. The summarizer is a promise each test settles when it wants.
 */
import { describe, expect, it } from 'vitest';
import type { LLM, LLMRequest, LLMResponse } from '../../src/llm/llm.js';
import { LLMError } from '../../src/llm/llm.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { openSession, type Session } from '../../src/session/index.js';
import type { WorkmemEvent } from '../../src/events.js';
import { collect, logEntries, newSession, ofType, tempHome } from '../helpers.js';
import { ContextWatch, renderContext } from '../../src/cli/contextView.js';
import { meteredModel } from '../../src/eval/meteredModel.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { sessionMachine } from '../../machines/sessionMachine.js';
import { chartOf, toDot } from '../../src/viz/statechart.js';

const WINDOW = 8_000;
const SUMMARY =
  '## Goal\n- Plan the trip.\n\n## Decisions\n- none\n\n## Progress\n- talked\n\n## Open items\n- none\n\n## Key facts\n- the hotel is Blue Door';

/** A summary request the test answers (or fails) when it wants. */
interface Asked {
  request: LLMRequest;
  signal: AbortSignal;
  background: boolean;
  answer(text?: string): void;
  fail(error?: Error): void;
}

/** The scripted model with a summarizer whose requests wait for the test. */
function modelWithSummaries(reply: (request: LLMRequest) => string | { compact: true } = () => 'Noted. ' + 'detail '.repeat(120)) {
  const asked: Asked[] = [];
  const waiting: ((a: Asked) => void)[] = [];
  const base = scriptedModel(
    (request) => {
      const r = reply(request);
      return typeof r === 'string'
        ? { text: r }
        : { toolCalls: [{ name: 'compact_history', arguments: { target: 'conversation', keep_recent: 1 } }] };
    },
    { contextWindow: WINDOW, maxOutputTokens: 400 },
  );
  const llm: LLM & { requests: LLMRequest[] } = Object.assign(base, {
    summarize: (request: LLMRequest, options: { signal: AbortSignal; background?: boolean }) =>
      new Promise<LLMResponse>((resolve, reject) => {
        options.signal.addEventListener('abort', () => reject(new LLMError('aborted', 'the request was aborted')), { once: true });
        const a: Asked = {
          request,
          signal: options.signal,
          background: options.background === true,
          answer: (text = SUMMARY) =>
            resolve({
              message: { role: 'assistant', content: text },
              usage: { promptTokens: 900, completionTokens: 60 },
              finishReason: 'stop',
            }),
          fail: (error = new LLMError('server', 'the summarizer is down', { status: 503 })) => reject(error),
        };
        asked.push(a);
        waiting.shift()?.(a);
      }),
  });
  /** The next summary request (already asked, or when it is). */
  const next = (): Promise<Asked> => {
    const pending = asked.find((a) => !(a as { taken?: boolean }).taken);
    if (pending) {
      (pending as { taken?: boolean }).taken = true;
      return Promise.resolve(pending);
    }
    return new Promise((resolve) =>
      waiting.push((a) => {
        (a as { taken?: boolean }).taken = true;
        resolve(a);
      }),
    );
  };
  return { llm, asked, next };
}

const question = (t: number) => `Question ${t}: ${'about the trip and its many details '.repeat(10)}`;

/** Turns until a background summary starts; it is answered, and one more turn goes by: it is ready. */
async function untilReady(session: Session, events: WorkmemEvent[], next: () => Promise<Asked>): Promise<void> {
  let t = 0;
  while (ofType(events, 'background_start').length === 0) await session.prompt(question(++t));
  (await next()).answer();
  await session.prompt(question(++t));
  expect(session.state.background.status).toBe('ready');
}

describe('background compaction (Session)', () => {
  it('prepares the summary once the history passes the background threshold, and the fallback swaps it in without waiting', async () => {
    const { llm, asked, next } = modelWithSummaries();
    // Metered as workmem eval meters its arms: the bill counts background summaries by their own kind.
    const meter = meteredModel(llm, await loadTokenCounter('gpt-4o'));
    const session = await newSession({ llm: meter.llm, settings: { injectHistory: true } });
    const events = collect(session);
    const watch = new ContextWatch(session);
    let t = 0;
    // Turns until the background summary starts (60 % of the window).
    while (ofType(events, 'background_start').length === 0) await session.prompt(question(++t));
    const started = ofType(events, 'background_start')[0]!;
    expect(started.turns).toMatch(/^1(-\d+)?$/);
    expect(session.state.background).toMatchObject({ status: 'summarizing', turns: started.turns });
    const summary = await next();
    expect(summary.background).toBe(true);
    // Turns go on while it runs: none waits for it.
    await session.prompt(question(++t));
    summary.answer();
    await session.idle();
    await new Promise((r) => setImmediate(r));
    expect(ofType(events, 'background_end')).toMatchObject([{ status: 'ready', usage: { input: 900, cached: 0, output: 60 } }]);
    expect(session.state.background).toMatchObject({ status: 'ready', made: 1, used: 0 });
    // On to the fallback line: it swaps the prepared summary in, and asks for no other.
    while (ofType(events, 'compaction_end').length === 0) await session.prompt(question(++t));
    const [end] = ofType(events, 'compaction_end');
    expect(end).toMatchObject({ reason: 'background' });
    expect(end!.replaced).toBeGreaterThan(0);
    expect(asked).toHaveLength(1);
    expect(meter.calls.filter((c) => c.kind !== 'answer')).toMatchObject([{ kind: 'background', input: 900, output: 60 }]);
    const entry = logEntries(session.dir).find((e) => e.type === 'compaction')!;
    expect(entry).toMatchObject({ reason: 'background', strategy: 'summarize' });
    expect(entry.type === 'compaction' && entry.note?.message.content).toContain('the hotel is Blue Door');
    // The request after it is below the line, and the archive holds the turns verbatim.
    const after = ofType(events, 'prompt_built')
      .filter((b) => b.turn === end!.turn)
      .at(-1)!;
    expect(after.tokens.percent).toBeLessThan(75);
    expect(session.state.background).toMatchObject({ status: 'waiting', made: 1, used: 1 });
    // /context says what background summaries did and cost.
    const text = renderContext(await watch.breakdown());
    expect(text).toContain('Background summaries (prepared above 60 % (4,800 tokens)): none under way');
    expect(text).toContain('made 1, swapped in 1, dropped 0, failed 0 · cost 900 input (0 cached), 60 output tokens');
    expect(text).toMatch(/turn \d+ \(background\): \d+ items/);
    watch.close();
    await session.close();
  });

  it('a jump past the line (a long message) asks no model either: what the summary does not cover is archived with it, unsummarised', async () => {
    const { llm, asked, next } = modelWithSummaries();
    const session = await newSession({ llm, settings: { injectHistory: true } });
    const events = collect(session);
    await untilReady(session, events, next);
    // From about 62 % to over 90 % in one message: the fallback must shed more than the summary covers.
    await session.prompt(`A long one: ${'every detail of the itinerary, day by day, '.repeat(260)}`);
    const [end] = ofType(events, 'compaction_end');
    expect(end).toMatchObject({ reason: 'background' });
    expect(asked).toHaveLength(1);
    const entry = logEntries(session.dir).find((e) => e.type === 'compaction')!;
    const note = entry.type === 'compaction' ? entry.note!.message.content : '';
    expect(note).toMatch(
      /^\[Earlier conversation compacted: summary of turns 1-\d+ \(\d+ messages\); turns \d+-\d+ \(\d+ messages, \d+ tokens\) have no summary; all of them are verbatim in working-memory\/detail\//,
    );
    expect(note).toContain('the hotel is Blue Door');
    // As far as the fallback goes: the request after it is at its target, well below the line.
    const after = ofType(events, 'prompt_built')
      .filter((b) => b.turn === end!.turn)
      .at(-1)!;
    expect(after.tokens.percent).toBeLessThan(60);
    await session.close();
  });

  it('a summary still running when the fallback is due: the fallback summarises as before, and the one in flight is superseded', async () => {
    const { llm, asked, next } = modelWithSummaries();
    const session = await newSession({ llm, settings: { injectHistory: true } });
    const events = collect(session);
    let t = 0;
    while (ofType(events, 'background_start').length === 0) await session.prompt(question(++t));
    const background = await next();
    // The fallback's own summary, asked while the background one still runs.
    const fallback = (async () => {
      const own = await next();
      expect(own.background).toBe(false);
      own.answer();
    })();
    while (ofType(events, 'compaction_end').length === 0) await session.prompt(question(++t));
    await fallback;
    expect(ofType(events, 'compaction_end')[0]).toMatchObject({ reason: 'fallback' });
    expect(ofType(events, 'background_end')).toMatchObject([{ status: 'superseded' }]);
    background.answer(); // too late: nothing happens
    await new Promise((r) => setImmediate(r));
    expect(ofType(events, 'background_end')).toHaveLength(1);
    expect(asked).toHaveLength(2);
    await session.close();
  });

  it('a failed summary fails no turn, is reported, and is tried again later', async () => {
    const { llm, next } = modelWithSummaries();
    const session = await newSession({ llm, settings: { injectHistory: true } });
    const events = collect(session);
    let t = 0;
    while (ofType(events, 'background_start').length === 0) await session.prompt(question(++t));
    (await next()).fail();
    const result = await session.prompt(question(++t));
    expect(result.status).toBe('done');
    const [failed] = ofType(events, 'background_end');
    expect(failed).toMatchObject({ status: 'failed', error: { kind: 'server', retryable: true } });
    expect(failed!.error!.message).toMatch(/the summarizer is down/);
    expect(session.state.background).toMatchObject({ status: 'resting', failed: 1 });
    expect(ofType(events, 'error').filter((e) => e.fatal)).toEqual([]);
    await session.close();
  });

  it("drops a ready summary that the model's own compact_history made unnecessary", async () => {
    let compactNow = false;
    const { llm, next } = modelWithSummaries((request) => {
      const last = request.messages.at(-1)!;
      if (compactNow && last.role === 'user') return { compact: true };
      return 'Noted. ' + 'detail '.repeat(120);
    });
    const session = await newSession({ llm, settings: { injectHistory: true } });
    const events = collect(session);
    await untilReady(session, events, next);
    compactNow = true;
    await session.prompt('Tidy up your history, please.');
    expect(ofType(events, 'compaction_end').map((e) => e.reason)).toEqual(['llm']);
    expect(ofType(events, 'background_dropped')).toHaveLength(1);
    expect(session.state.background).toMatchObject({ status: 'waiting', made: 1, used: 0, dropped: 1 });
    await session.close();
  });

  it('a session closed while a summary runs loses that summary and nothing else; the next open prepares it again', async () => {
    const home = tempHome();
    const first = modelWithSummaries();
    const session = await newSession({ llm: first.llm, home, settings: { injectHistory: true } });
    const events = collect(session);
    let t = 0;
    while (ofType(events, 'background_start').length === 0) await session.prompt(question(++t));
    const inFlight = await first.next();
    const logBefore = logEntries(session.dir);
    await session.close();
    // The summary's request was stopped; the log holds exactly what it held.
    expect(inFlight.signal.aborted).toBe(true);
    expect(logEntries(session.dir)).toEqual(logBefore);
    expect(ofType(events, 'background_end')).toEqual([]);

    const again = modelWithSummaries();
    const reopened = await openSession(session.id, { llm: again.llm, home, env: {}, settings: { injectHistory: true } });
    const later = collect(reopened);
    await reopened.prompt(question(++t));
    expect(ofType(later, 'background_start')).toHaveLength(1);
    expect((await again.next()).background).toBe(true);
    await reopened.close();
  });

  it('backgroundThreshold false, or a model without a summarizer, prepares nothing', async () => {
    const { llm, asked } = modelWithSummaries();
    const off = await newSession({ llm, settings: { injectHistory: true, backgroundThreshold: false } });
    const events = collect(off);
    for (let t = 1; t <= 12; t++) await off.prompt(question(t));
    expect(ofType(events, 'background_start')).toEqual([]);
    expect(off.state.background.status).toBe('off');
    expect(asked.every((a) => !a.background)).toBe(true);
    await off.close();
    const plain = await newSession({ llm: scriptedModel(() => ({ text: 'ok' }), { contextWindow: WINDOW }) });
    expect(plain.state.background.status).toBe('off');
    await plain.close();
  });

  it('the visualizer draws the background actor in the session chart, in a region of its own beside the turns', () => {
    const chart = chartOf(sessionMachine);
    expect(chart.states.find((st) => st.id === 'session.background.summarizing')?.invokes).toEqual(['backgroundSummary']);
    expect(chart.states.filter((st) => st.parent === 'session').map((st) => st.key)).toEqual(['turns', 'background']);
    const dot = toDot(chart);
    // Both regions start: each has its own initial mark, the parallel root none.
    expect(dot).toContain('"initial:session.turns"');
    expect(dot).toContain('"initial:session.background"');
    expect(dot).not.toContain('"initial:session"');
    expect(dot).toMatch(/label="background"; id="state:session.background"; style="rounded,dashed"/);
  });
});
