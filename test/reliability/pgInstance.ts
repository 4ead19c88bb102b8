/**
 * One instance of a service keeping sessions in PostgreSQL, for the Postgres family
 * (postgres.ts): a process the parent kills, stops and resumes. It opens one session and
 * runs turns against the test model server, telling the parent on stdout, synchronously
 * (so a kill cannot reorder it):
 *   READY <holder>                    the session is open under this instance's lease
 *   ACK <seq> <sha256>                a message_end: the message is in the log
 *   TURN <n> <status> [<error>]       prompt() resolved
 *   STOPPING                          about to SIGSTOP itself (stopAt below)
 *   REFUSED <name>: <message>         the session could not be opened
 *   FAILED <stack>                    anything else
 * `stopAt: 'memory-write'` makes it stop itself inside the transaction of a memory-file
 * write, after the fence took its share lock on the lease row: the worst place to pause.
 *
 * Usage: node pgInstance.js '<json InstanceConfig>'
 */
import { writeSync } from 'node:fs';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { openSession } from '../../src/session/index.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { observedPool } from '../storage/observedPool.js';
import { sha } from './hash.js';

export interface InstanceConfig {
  url: string;
  schema: string;
  home: string;
  id: string;
  /** Names this instance's prompts ("[A 3] …"), so the log shows who wrote what. */
  tag: string;
  baseURL: string;
  leaseMs: number;
  renewMs: number;
  turns: number;
  stopAt?: 'memory-write';
}

const config = JSON.parse(process.argv[2]!) as InstanceConfig;
const say = (line: string): void => void writeSync(1, `${line}\n`);

let stopped = false;
const pool = observedPool(
  { connectionString: config.url, max: 4 },
  {
    done: (text) => {
      // The memory-file write's fence, inside its transaction: the share lock is held now.
      if (config.stopAt === 'memory-write' && !stopped && /^WITH fence AS .* SELECT token FROM fence$/s.test(text)) {
        stopped = true;
        say('STOPPING');
        process.kill(process.pid, 'SIGSTOP');
      }
    },
  },
);

async function main(): Promise<void> {
  const store = postgresStore({ pool, schema: config.schema, leaseMs: config.leaseMs, renewMs: config.renewMs });
  const llm = openaiChat({ baseURL: config.baseURL, apiKey: 'k', model: 'gpt-4o', env: {}, maxRetries: 0 });
  let session;
  try {
    session = await openSession(config.id, { llm, home: config.home, store, env: {}, trace: false });
  } catch (error) {
    say(`REFUSED ${(error as Error).name}: ${(error as Error).message}`);
    await pool.end();
    return;
  }
  say('READY');
  session.on('message_end', (e) => say(`ACK ${e.seq} ${sha(JSON.stringify(e.message))}`));
  const first = session.state.turn + 1;
  for (let t = first; t < first + config.turns; t++) {
    const result = await session.prompt(`[${config.tag} ${t}] ${'Context for the turn. '.repeat(4)}`);
    say(`TURN ${result.turn ?? t} ${result.status}${result.error ? ` ${result.error.message.replace(/\n/g, ' ')}` : ''}`);
    if (result.status === 'failed') {
      // Refused once: a second try must be refused too, then this instance gives up.
      const again = await session.prompt(`[${config.tag} ${t + 1}] once more`);
      say(`TURN ${again.turn ?? t + 1} ${again.status}${again.error ? ` ${again.error.message.replace(/\n/g, ' ')}` : ''}`);
      break;
    }
  }
  await session.close();
  await store.close();
  await pool.end();
  say('DONE');
}

main().catch((error: unknown) => {
  say(`FAILED ${(error as Error)?.stack ?? error}`);
  process.exit(2);
});
