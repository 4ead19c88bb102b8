/**
 * The reminder's token rule and the 75 % fallback decide on the percentage the model is
 * shown in <context_meta> (issue 18), not on an estimate with an allowance: on a 10k
 * window, the request the server receives and the events agree to the percent.
 */
import { describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import type { ChatRequest } from '../../src/testing/index.js';
import type { WorkmemEvent } from '../../src/index.js';
import { collect, newSession, ofType, testServers } from '../helpers.js';

const serve = testServers();
const WINDOW = 10_000;

const metaOf = (request: ChatRequest) =>
  JSON.parse(/<context_meta>\n(.*)\n<\/context_meta>/.exec(request.messages.at(-1)!.content ?? '')![1]!) as {
    tokens_used: number;
    tokens_percent: number;
  };

/**
 * Phase 1 pinned, a short answer to every turn, each turn about 0.3 % of the window, so
 * every whole percent is shown on the way up; until `stop` says so.
 */
async function fill(settings: SettingsOverrides, stop: (events: WorkmemEvent[]) => boolean) {
  const server = await serve(() => ({ content: 'ok' }));
  const llm = openaiChat({ baseURL: server.baseURL, model: 'workmem-test', contextWindow: WINDOW, maxOutputTokens: 200, env: {} });
  const session = await newSession({ llm, settings: { injectHistory: true, ...settings } });
  const events = collect(session);
  for (let turn = 1; turn <= 400 && !stop(events); turn++) await session.prompt(`Note ${turn}: ${'more words here '.repeat(5)}`);
  await session.close();
  // One prompt_built per turn request the server received, in order (a compaction's summary request has no tail).
  const requests = server.requests.filter((r) => r.body.messages.at(-1)!.content?.includes('<context_meta>'));
  const built = ofType(events, 'prompt_built');
  expect(built).toHaveLength(requests.length);
  const shown = requests.map((r) => metaOf(r.body));
  built.forEach((b, i) => expect(b.tokens.percent).toBe(shown[i]!.tokens_percent));
  return { events, built, shown, requests };
}

describe('decisions on the percentage the model is shown', () => {
  it('the reminder token rule fires exactly when the shown percent is over its threshold (70)', async () => {
    const { events, built, shown, requests } = await fill(
      { fallbackThreshold: 0.95, reminder: { maxRounds: 1000, minRounds: 0, tokenThreshold: 70 } },
      (e) => ofType(e, 'reminder').length >= 5,
    );
    const reminders = ofType(events, 'reminder');
    expect(reminders.length).toBeGreaterThanOrEqual(5);
    built.forEach((b, i) => {
      const reminder = reminders.find((r) => r.turn === b.turn && r.request === b.request);
      const body = requests[i]!.body.messages.at(-1)!.content!;
      if (reminder) {
        expect(reminder.reason).toBe('tokens');
        expect(shown[i]!.tokens_percent).toBeGreaterThan(70);
        // The event and the reminder text name the percent the model is shown.
        expect(reminder.tokensPercent).toBe(shown[i]!.tokens_percent);
        expect(body).toContain(`Tokens: ${shown[i]!.tokens_percent}% (${shown[i]!.tokens_used} / ${WINDOW})`);
      } else {
        expect(shown[i]!.tokens_percent).toBeLessThanOrEqual(70);
        expect(body).not.toContain('<memory_reminder');
      }
    });
    // Every whole percent was shown on the way up: the first reminder is at 71 at the latest.
    expect(shown.map((s) => s.tokens_percent)).toContain(70);
  });

  it('the fallback fires exactly when the request would show the threshold (75 %)', async () => {
    const { events, built, shown } = await fill({ reminder: { enabled: false } }, (e) => ofType(e, 'compaction_start').length > 0);
    const [start] = ofType(events, 'compaction_start');
    expect(start).toMatchObject({ reason: 'fallback' });
    const at = built.findIndex((b) => b.turn === start!.turn && b.request === start!.request);
    expect(at).toBeGreaterThan(0);
    // Before it, every request showed under 75, the last one 74: the fallback did not fire early.
    expect(Math.max(...shown.slice(0, at).map((s) => s.tokens_percent))).toBe(74);
    expect(shown[at - 1]!.tokens_percent).toBe(74);
    // What it compacted was the request as it would have been shown: 75 %. The event counts the history it
    // compacted; the rest of that request is what the request rebuilt after it sends besides its history.
    const rest = built[at]!.tokens.total - built[at]!.tokens.history;
    expect(Math.round(((start!.tokensBefore + rest) / WINDOW) * 100)).toBe(75);
    // And what was sent after it is well under the line.
    expect(shown[at]!.tokens_percent).toBeLessThan(75);
  });
});
