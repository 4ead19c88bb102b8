/**
 * An instance that races for Postgres sessions on command, for the race case of the
 * Postgres family: it stays up for many trials, with its own store (its own pool and
 * holder name), as a separate service instance would.
 *
 * argv: <connection string> <schema> <home>
 * stdin, one command a line:
 *   open <id> <at ms>     at that wall-clock time, openSession(id)
 *   create <id> <at ms>   at that time, create session <id> in the store
 *   release               close what was opened or created
 * stdout: `got`, `refused <pid> <until> <message>` (SessionInUseError), or `error <name>: <message>`; `released`.
 */
import { createInterface } from 'node:readline';
import { openSession, type Session } from '../../src/session/index.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import type { SessionStorage } from '../../src/storage/sessionStore.js';
import { SessionInUseError } from '../../src/storage/storeErrors.js';
import { metaFor } from '../storage/sessionMetaFixture.js';

const [url, schema, home] = process.argv.slice(2);
const store = postgresStore({ connectionString: url!, schema: schema!, leaseMs: 5_000 });
const llm = {
  model: 'x',
  contextWindow: 128_000,
  maxOutputTokens: 4_096,
  complete: async () => ({ message: { role: 'assistant' as const, content: 'ok' }, usage: null, finishReason: 'stop' }),
};
const say = (line: string): void => void process.stdout.write(`${line}\n`);
let held: Session | SessionStorage | null = null;

await store.list(); // connected and migrated before the first race
say('up');
for await (const line of createInterface({ input: process.stdin })) {
  const [command, id, at] = line.split(' ');
  if (command === 'open' || command === 'create') {
    // Sleep most of the wait, spin the last milliseconds so the racers start together.
    const wait = Number(at) - Date.now();
    if (wait > 3) await new Promise((resolve) => setTimeout(resolve, wait - 3));
    while (Date.now() < Number(at));
    try {
      held =
        command === 'open'
          ? await openSession(id!, { llm, home: home!, store, env: {}, trace: false })
          : await store.create({
              meta: metaFor(id!, '/race', 1),
            });
      say('got');
    } catch (error) {
      if (error instanceof SessionInUseError) say(`refused ${error.pid} ${error.until} ${error.message}`);
      else say(`error ${(error as Error).name}: ${(error as Error).message}`);
    }
  } else if (command === 'release') {
    await held?.close();
    held = null;
    say('released');
  }
}
await store.close();
