/**
 * A turn aborted after its request is built and before it is sent: nothing is sent, and no
 * answer joins the history, even from a model that only listens for the signal's 'abort'
 * event (as a host loop's bridge does) and so never hears of an abort that came first.
 */
import { describe, expect, it } from 'vitest';
import type { LLM } from '../../src/llm/llm.js';
import { collect, newSession, ofType } from '../helpers.js';

describe('an abort before the request is sent', () => {
  it('sends nothing and keeps no answer', async () => {
    let calls = 0;
    const llm: LLM = {
      model: 'gpt-4o',
      contextWindow: 128_000,
      maxOutputTokens: 4096,
      complete: (_request, { signal }) => {
        calls++;
        return new Promise((resolve, reject) => {
          signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          setImmediate(() =>
            resolve({
              message: { role: 'assistant', content: 'A late answer.' },
              usage: { promptTokens: 1, completionTokens: 1 },
              finishReason: 'stop',
            }),
          );
        });
      },
    };
    const session = await newSession({ llm, trace: false });
    try {
      const events = collect(session);
      let aborted = false;
      session.on('prompt_built', () => {
        if (!aborted) session.abort();
        aborted = true;
      });
      const result = await session.prompt('Hello.');
      await session.prompt('And again?').catch(() => null); // the next turn waits for whatever the first left running
      expect(result.status).toBe('aborted');
      expect(calls).toBe(1); // the second turn's
      const firstTurn = ofType(events, 'message_end').filter((e) => e.turn === 1);
      expect(firstTurn.map((e) => e.message.role)).toEqual(['user']);
      expect(session.history.items.some((i) => i.message.content === 'A late answer.' && i.turn === 1)).toBe(false);
    } finally {
      await session.close();
    }
  });
});
