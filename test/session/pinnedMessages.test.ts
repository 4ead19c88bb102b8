/**
 * Pinned messages as a host meets them: rules pinned when a session is created and a task
 * pinned with prompt(text, { pin: true }) are carried by every request in every phase
 * (before the window in phase 2 and hybrid, counted), survive the system's and the user's
 * compactions, keep the session's title for its subject, stay pinned when the session is
 * opened again, and a pin on anything but a user message is refused with a clear error.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pinsBetween, tokensBetween, type HistoryView } from '../../src/history/historyView.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { ConfigError } from '../../src/settings/config.js';
import { HostLoop, HostLoopError } from '../../src/session/hostLoop.js';
import { openSession } from '../../src/session/index.js';
import { collect, logEntries, newSession, ofType, tempHome } from '../helpers.js';

const RULES = 'Rules: answer in English, never delete files, ask before spending money.';
const TASK = 'Task: plan a rose garden for a north-facing yard.\nKeep it under 200 euros.';
const filler = (i: number) => `Question ${i}: ${'what about the soil, the light and the water, '.repeat(12)}`;

/** Every request carries every pin recorded so far, in order; those before the range right after the system message; all counted. */
function checkCarried(
  requests: readonly { messages: ChatMessage[]; cacheBreakpoints?: readonly { message: number }[] }[],
  built: readonly { range: [number, number]; pinned?: number[]; tokens: { history: number } }[],
  views: readonly HistoryView[],
): number {
  let before = 0;
  requests.forEach((request, r) => {
    const { range, pinned = [], tokens } = built[r]!;
    const view = views[r]!;
    const pins = pinsBetween(view, 0, view.length);
    expect(pinned, `request ${r + 1}`).toEqual(pins);
    const first = pins.filter((i) => i < range[0]);
    before += first.length ? 1 : 0;
    const sent = request.messages.slice(1, 1 + first.length);
    expect(sent, `request ${r + 1}`).toEqual(first.map((i) => view.items[i]!.message));
    expect(request.messages.length, `request ${r + 1}`).toBe(1 + first.length + range[1] - range[0]);
    const pinnedTokens = first.reduce((n, i) => n + view.items[i]!.tokens, 0);
    expect(tokens.history, `request ${r + 1}`).toBe(pinnedTokens + tokensBetween(view, range[0], range[1]));
    for (const i of pins) expect(request.messages.some((m) => m.content?.startsWith(view.items[i]!.message.content ?? '-'))).toBe(true);
    // Where the pins sent first end is a cache breakpoint: they stay while the window moves on.
    if (first.length && first.length < request.messages.length - 2)
      expect(request.cacheBreakpoints, `request ${r + 1}`).toContainEqual({ message: first.length });
  });
  return before;
}

describe('pinned messages in a Session', () => {
  for (const mode of ['phase2', 'hybrid'] as const) {
    it(`${mode}: every request carries the pins, before the window once it moved on, and no compaction archives them`, async () => {
      const llm = scriptedModel(() => ({ text: `Noted. ${'The roses want morning sun. '.repeat(8)}` }), { contextWindow: 5_000 });
      const home = tempHome();
      const settings = { historyMode: mode, recentTurns: 1, hybridRecent: 3, reserveOutputTokens: 300, keepRecentTurns: 1 };
      const session = await newSession({ llm, home, settings, pinned: [RULES] });
      const events = collect(session);
      const views: HistoryView[] = [];
      session.on('prompt_built', () => views.push(session.history));
      await session.prompt(TASK, { pin: true });
      for (let i = 1; i <= 14; i++) await session.prompt(filler(i));
      const compacted = await session.compact({ target: 'all', keepRecent: 1 });
      expect(compacted.changed).toBeGreaterThan(0);
      await session.prompt('What was the budget?');

      const built = ofType(events, 'prompt_built');
      expect(built).toHaveLength(llm.requests.length);
      const sentFirst = checkCarried(llm.requests, built, views);
      expect(sentFirst, 'requests that sent pinned messages before the window').toBeGreaterThan(10);
      // The history was compacted (the horizon and the user's /compact), the pins untouched.
      expect(ofType(events, 'compaction_end').filter((e) => e.replaced > 0).length).toBeGreaterThanOrEqual(2);
      const pinned = session.history.items.slice(0, session.history.length).filter((i) => i.pinned);
      expect(pinned.map((i) => [i.turn, i.message.content])).toEqual([
        [0, RULES],
        [1, TASK],
      ]);
      // The log: both pinned, the rules before the first turn; the title is the task's, not the rules'.
      const entries = logEntries(session.dir).filter((e) => e.type === 'message' && e.pinned);
      expect(entries.map((e) => [e.turn, e.seq])).toEqual(pinned.map((i) => [i.turn, i.seq]));
      expect(session.record.meta.title).toBe('Task: plan a rose garden for a north-facing yard.');
      expect(
        ofType(events, 'message_end')
          .filter((e) => e.pinned)
          .map((e) => e.seq),
      ).toEqual([pinned[1]!.seq]);

      // Opened again (with the same pins, or none given): the same pins, the same next request.
      const next = await session.nextRequest();
      await session.close();
      const reopened = await openSession(session.id, { llm, home, settings, env: {}, pinned: [RULES] });
      expect(reopened.history.items.filter((i) => i.pinned)).toEqual(pinned);
      expect(await reopened.nextRequest()).toEqual(next);
      await reopened.close();
    });
  }

  it('the fallback at 75 % compacts around the pins in phase 1, and a pin opening the request is the message the tail goes on', async () => {
    const llm = scriptedModel(() => ({ text: `Fine. ${'Plant them deep. '.repeat(30)}` }), { contextWindow: 4_000 });
    const session = await newSession({ llm, settings: { historyMode: 'phase1', reserveOutputTokens: 300, keepRecentTurns: 1 } });
    const events = collect(session);
    const views: HistoryView[] = [];
    session.on('prompt_built', () => views.push(session.history));
    await session.prompt(filler(0));
    await session.prompt(TASK, { pin: true });
    for (let i = 1; i <= 8; i++) await session.prompt(filler(i));
    expect(ofType(events, 'compaction_end').filter((e) => e.reason === 'fallback' && e.replaced > 0).length).toBeGreaterThan(0);
    checkCarried(llm.requests, ofType(events, 'prompt_built'), views);
    // The task's own request: it is the last message, with the tail after it.
    expect(llm.requests[1]!.messages.at(-1)!.content).toMatch(/^Task: plan a rose garden[\s\S]*<context_meta>/);
    // The archive came before the pin, the note in the place of the first turn.
    const items = session.history.items.slice(0, session.history.length);
    expect(items[0]!.message.content).toMatch(/^\[Earlier conversation compacted/);
    expect(items.filter((i) => i.pinned).map((i) => i.message.content)).toEqual([TASK]);
    await session.close();
  });

  it('refuses what cannot be pinned and pins that differ from the session’s, with a clear error, losing nothing', async () => {
    const llm = scriptedModel(() => ({ text: 'ok' }));
    await expect(newSession({ llm, pinned: 'rules' as never })).rejects.toThrow(
      new ConfigError('createSession: options.pinned must be an array of message texts, got string'),
    );
    await expect(newSession({ llm, pinned: ['  '] })).rejects.toThrow(
      'createSession: options.pinned[0] must be a non-empty string, got an empty one',
    );
    const home = tempHome();
    const session = await newSession({ llm, home, pinned: [RULES] });
    await expect(session.prompt('hello', { pin: 'yes' } as never)).rejects.toThrow('prompt options.pin must be true or false, got string');
    await session.prompt('hello');
    await session.close();
    await expect(openSession(session.id, { llm, home, env: {}, pinned: ['Other rules.'] })).rejects.toThrow(
      /was created with 1 pinned message and options\.pinned differs: a session keeps the pins it was created with/,
    );
    // Nothing was taken or changed: it opens with the right pins.
    const again = await openSession(session.id, { llm, home, env: {}, pinned: [RULES] });
    expect(again.history.length).toBe(3);
    await again.close();

    // A log line pinning an assistant message is damage: reported, skipped, the rest loads.
    appendFileSync(
      join(session.dir, 'messages.jsonl'),
      `${JSON.stringify({ type: 'message', seq: 99, ts: 0, turn: 1, tokens: 3, pinned: true, message: { role: 'assistant', content: 'x' } })}\n`,
    );
    const damaged = await openSession(session.id, { llm, home, env: {} });
    expect(damaged.damage.some((d) => d.endsWith('pinned entry that is not a user message'))).toBe(true);
    expect(damaged.history.length).toBe(3);
    await damaged.close();
  });

  it('a host loop pins a user message marked pinned, and refuses a pin on an assistant or a system message', async () => {
    const loop = await HostLoop.open({
      model: 'gpt-4o',
      contextWindow: 8_000,
      home: tempHome(),
      cwd: '/work/project',
      env: {},
      pinned: [RULES],
    });
    const messages = [{ role: 'user' as const, content: TASK, pinned: true }];
    const call = await loop.prepare({ messages, tools: [] });
    expect(call.request.messages.slice(1).map((m) => m.content?.split('\n\n<context_meta>')[0])).toEqual([RULES, TASK]);
    await call.answer({ message: { role: 'assistant', content: 'On it.' }, usage: null, finishReason: 'stop' });
    const items = loop.session.history.items.slice(0, loop.session.history.length);
    expect(items.map((i) => [i.turn, i.pinned === true])).toEqual([
      [0, true],
      [1, true],
      [1, false],
    ]);
    // The log's copy has no `pinned` inside the message: the flag is the entry's.
    expect(items[1]!.message).toEqual({ role: 'user', content: TASK });

    // A pin on a message not yet recorded but an assistant one: what came before it is kept, it is refused.
    const wrong = [
      ...messages,
      { role: 'assistant' as const, content: 'On it.' },
      { role: 'user' as const, content: 'Next?' },
      { role: 'assistant' as const, content: 'Made up.', pinned: true },
    ];
    const refused = loop.prepare({ messages: wrong, tools: [] });
    await expect(refused).rejects.toThrow(HostLoopError);
    await expect(refused).rejects.toThrow(
      'message 4 of the conversation is marked pinned, but only a user message can be pinned (its role is assistant)',
    );
    expect(loop.session.history.items.slice(0, loop.session.history.length).map((i) => i.message.content)).toEqual([
      RULES,
      TASK,
      'On it.',
      'Next?',
    ]);
    await expect(loop.prepare({ messages: [{ role: 'system', content: 'x', pinned: true }, ...messages], tools: [] })).rejects.toThrow(
      'a system message is marked pinned, but only a user message can be pinned',
    );
    await loop.close();
  });
});
