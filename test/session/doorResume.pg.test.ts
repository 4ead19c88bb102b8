/**
 * A middleware-driven session resumed by another instance on PostgreSQL: the AI SDK's
 * streamText and LangChain's createAgent drive the first 20 turns of the garden conversation
 * through one store and home, close, and another instance (a store and a home of its own)
 * opens the same session and drives the other 20. The server receives, byte for byte, the
 * requests of the conversation driven without a break on the file store. Skipped, saying
 * so, where PostgreSQL is not installed.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import type { SessionStore } from '../../src/storage/sessionStore.js';
import { tempHome, testServers } from '../helpers.js';
import { adminQuery, usePostgres } from '../storage/postgresServer.js';
import { driveDoor, policy, runDoor, type DoorName } from './doors.js';
import { prompts } from './gardenConversation.js';

const { available, server: postgres } = usePostgres('middleware resume');
const serve = testServers();
const SPLIT = 20;

const stores: SessionStore[] = [];
const schemas: string[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  for (const schema of schemas.splice(0)) await adminQuery(postgres().url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
});

/** An instance's store: a pool of its own on the test's schema. */
function instance(schema: string): SessionStore {
  const store = postgresStore({ connectionString: postgres().url, schema });
  stores.push(store);
  return store;
}

describe.skipIf(!available)('a middleware-driven session resumed by another instance on PostgreSQL', () => {
  it.each<DoorName>(['streamText', 'createAgent (invoke)'])(
    '%s: the second instance sends the requests of an unbroken run',
    async (door) => {
      const unbroken = await runDoor(door, tempHome());
      const schema = `wm_resume_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      const server = await serve(policy(), { promptCaching: 'off' });
      const first = await driveDoor({
        door,
        baseURL: server.baseURL,
        home: tempHome(),
        store: instance(schema),
        prompts: prompts().slice(0, SPLIT),
      });
      const second = await driveDoor({
        door,
        baseURL: server.baseURL,
        home: tempHome(),
        store: instance(schema),
        sessionId: first.sessionId,
        prompts: prompts().slice(SPLIT),
        held: first.held,
      });

      expect(second.sessionId).toBe(first.sessionId);
      expect(server.requests.length).toBe(unbroken.requests.length);
      server.requests.forEach((r, i) => expect(JSON.stringify(r.body), `${door}: request ${i + 1}`).toBe(unbroken.requests[i]));
      expect([...first.answers, ...second.answers]).toEqual(unbroken.answers);
      expect(second.memory).toBe(unbroken.memory);
    },
  );
});
