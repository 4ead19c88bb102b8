/**
 * A slow disk holds up only the session that waits for it (issue 39): one session's syncs
 * are held on its store's disk thread for as long as the test says, and meanwhile another
 * session of the same process streams a whole answer. Were a sync made on the event loop,
 * the held one would stop the process (here: for good) and the other's stream with it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { createSession } from '../../src/session/index.js';
import { diskThreads } from '../../src/storage/diskIO.js';
import { fileSessionStore } from '../../src/storage/fileSessionStore.js';
import { collect, ofType, tempHome, testServers } from '../helpers.js';

const serve = testServers();

describe('a slow disk under one session', () => {
  it("does not delay another session's stream: it is answered whole while the first waits for its sync", async () => {
    const server = await serve(() => ({ content: 'An answer streamed in many small pieces, one after another.' }), { chunkChars: 4 });
    const llm = () => openaiChat({ baseURL: server.baseURL, apiKey: 'test', model: 'gpt-4o', env: {} });
    // Open while the session is made; closed (0) from its first prompt on.
    const gate = new Int32Array(new SharedArrayBuffer(4)).fill(1);
    const slow = fileSessionStore({ home: tempHome(), diskIO: diskThreads({ threads: 1, syncGate: gate }) });
    const held = await createSession({ llm: llm(), store: slow, home: tempHome(), cwd: '/slow', env: {} });
    Atomics.store(gate, 0, 0);
    const other = await createSession({ llm: llm(), home: tempHome(), cwd: '/other', env: {} });
    const otherEvents = collect(other);

    let heldDone = false;
    const heldTurn = held.prompt('A question whose message waits for the disk.').finally(() => (heldDone = true));
    // Its message is written and its sync held on the disk thread.
    while (!readFileSync(join(held.dir, 'messages.jsonl'), 'utf8').includes('waits for the disk')) await sleep(10);
    const answered = await other.prompt('A question beside it.');
    expect(answered.status).toBe('done');
    expect(ofType(otherEvents, 'message_delta').length, 'streamed in pieces').toBeGreaterThan(5);
    expect(heldDone, "the slow session's sync is still held").toBe(false);
    expect(server.requests.length, 'only the other session reached the model').toBe(1);

    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    expect((await heldTurn).status).toBe('done');
    await Promise.all([held.close(), other.close()]);
  });
});
