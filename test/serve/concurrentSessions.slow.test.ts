/**
 * 50 conversations at once through one proxy, each its own session: every session's log
 * holds its own messages, all of them, in order, and nothing of another's.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { agentTurn, client, proxies, sessionState } from './proxyHarness.js';

const proxied = proxies();
const SESSIONS = 50;
const TURNS = 3;

describe('workmem serve under load', () => {
  it(`keeps ${SESSIONS} concurrent sessions apart: none lost, none interleaved`, async () => {
    const { proxy, home } = await proxied();
    const said = (s: number, t: number) => `My item${t} is s${s}v${t}.`;
    const answers = await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        const openai = client(proxy, { 'x-workmem-session': `load-${s}` });
        const messages: ChatCompletionMessageParam[] = [];
        const out: string[] = [];
        for (let t = 1; t <= TURNS; t++) out.push(await agentTurn(openai, messages, said(s, t), { stream: s % 2 === 0 }));
        out.push(await agentTurn(openai, messages, 'What is my item1?', { stream: s % 2 === 1 }));
        return out;
      }),
    );
    for (let s = 0; s < SESSIONS; s++) {
      expect(answers[s]!.at(-1)).toContain(`s${s}v1`);
      const { log } = await sessionState(sessionIdFor(`load-${s}`), { home });
      const users = log.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [e.message.content] : []));
      expect(users).toEqual([...Array.from({ length: TURNS }, (_, t) => said(s, t + 1)), 'What is my item1?']);
      const strangers = log.filter(
        (e) =>
          e.type === 'message' &&
          /s(\d+)v/.exec(e.message.content ?? '')?.[1] !== undefined &&
          !(e.message.content ?? '').includes(`s${s}v`),
      );
      expect(strangers).toEqual([]);
      expect(log.filter((e) => e.type === 'branch')).toEqual([]);
    }
  });
});
