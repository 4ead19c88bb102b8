/**
 * Two `workmem serve` processes on one PostgreSQL: conversations whose requests land on
 * either proxy, turn by turn, several at once. The lease moves with the requests; every
 * session's log holds all its messages, in order, none of another's, and the memory the
 * model wrote through one proxy answers through the other.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { protocolFollower, startTestServer } from '../../src/testing/index.js';
import { tempHome } from '../helpers.js';
import { usePostgres } from '../storage/postgresServer.js';
import { agentTurn, client, sessionState } from './proxyHarness.js';
import { serveProcesses } from './serveProcess.js';

const { available, server: postgres } = usePostgres('two proxies');
const serve = serveProcesses();
const CONVERSATIONS = 8;
const TURNS = 6;

describe.skipIf(!available)('two proxies on one PostgreSQL', () => {
  it('share sessions: requests land on either, nothing lost or interleaved', async () => {
    const upstream = await startTestServer({ policy: protocolFollower({ seed: 4 }) });
    const env = { WORKMEM_DATABASE_URL: postgres().url };
    try {
      const proxies = await Promise.all([
        serve(['--upstream', upstream.baseURL, '--keep-open', '0'], { ...env, WORKMEM_HOME: tempHome() }),
        serve(['--upstream', upstream.baseURL, '--keep-open', '0'], { ...env, WORKMEM_HOME: tempHome() }),
      ]);
      const said = (c: number, t: number) => `My thing${t} is c${c}t${t}.`;
      const answers = await Promise.all(
        Array.from({ length: CONVERSATIONS }, async (_, c) => {
          const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: `Conversation ${c}.` }];
          const out: string[] = [];
          for (let t = 1; t <= TURNS; t++) {
            const proxy = proxies[(c + t) % 2]!;
            out.push(await agentTurn(client(proxy, { 'x-workmem-session': `shared-${c}` }), messages, said(c, t), { stream: t % 2 === 0 }));
          }
          const last = proxies[c % 2]!;
          out.push(await agentTurn(client(last, { 'x-workmem-session': `shared-${c}` }), messages, 'What is my thing1?'));
          return out;
        }),
      );
      const store = postgresStore({ connectionString: postgres().url });
      try {
        for (let c = 0; c < CONVERSATIONS; c++) {
          expect(answers[c]!.at(-1)).toContain(`c${c}t1`);
          const { log } = await sessionState(sessionIdFor(`shared-${c}`), { home: tempHome(), store });
          const users = log.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [e.message.content] : []));
          expect(users).toEqual([...Array.from({ length: TURNS }, (_, t) => said(c, t + 1)), 'What is my thing1?']);
          expect(
            log.filter(
              (e) => e.type === 'message' && /c\d+t\d/.test(e.message.content ?? '') && !(e.message.content ?? '').includes(`c${c}t`),
            ),
          ).toEqual([]);
          expect(log.filter((e) => e.type === 'branch')).toEqual([]);
          // Gap-free, in order: the log's seqs are 1..n.
          expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
        }
      } finally {
        await store.close();
      }
      for (const p of proxies) expect(await p.stop()).toBe(0);
    } finally {
      await upstream.close();
    }
  });
});
