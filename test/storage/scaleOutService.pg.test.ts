/**
 * examples/scaleOutService.ts as it is meant to run: two instances, separate processes,
 * against one PostgreSQL (a fresh schema per test), the model a local test server. One
 * session's prompts alternate between them and the conversation continues; a session
 * busy in one instance is answered 409 (SessionInUseError: holder, until) by the other,
 * and queued by the one that has it. Skipped, saying so, where PostgreSQL is not installed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { protocolFollower, type ChatRequest, type Policy } from '../../src/testing/index.js';
import { tempHome, testServers } from '../helpers.js';
import { builtFile } from '../reliability/built.js';
import { usePostgres } from './postgresServer.js';
import { HANG_MS } from '../hangGuard.js';

const { available, server: postgres } = usePostgres('scale-out service');
const serve = testServers();

interface Instance {
  url: string;
  pid: number;
}

const children: ChildProcess[] = [];
const schemas: string[] = [];
afterEach(async () => {
  await Promise.all(children.splice(0).map(stop));
  if (!schemas.length) return;
  const client = new pg.Client({ connectionString: postgres().url });
  await client.connect();
  try {
    for (const schema of schemas.splice(0)) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
});

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => (clearTimeout(kill), resolve()));
    child.kill('SIGTERM'); // the example closes its sessions and gives their leases back
  });
}

/** One instance of the example, as its own process, on a free port. */
function startInstance(env: NodeJS.ProcessEnv): Promise<Instance> {
  const child = spawn(process.execPath, [builtFile('examples/scaleOutService.js')], {
    env: { PATH: process.env.PATH, PORT: '0', WORKMEM_HOME: tempHome(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the instance did not start: ${out}`)), HANG_MS);
    const read = (chunk: Buffer) => {
      out += chunk;
      const started = / on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (started) (clearTimeout(timer), resolve({ url: started[1]!, pid: child.pid! }));
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`the instance exited (${code}): ${out}`))));
  });
}

/** A schema of the test's own, two instances on it, the model a protocol follower that waits on `hold` when asked to take its time. */
async function twoInstances(): Promise<{ a: Instance; b: Instance; schema: string; requests: ChatRequest[]; hold: Hold }> {
  const hold = new Hold();
  const follower = protocolFollower({ seed: 3 });
  const requests: ChatRequest[] = [];
  const policy: Policy = async (request, context) => {
    requests.push(request);
    const last = request.messages.at(-1)!;
    if (last.role === 'user' && (last.content ?? '').startsWith('Take your time.')) await hold.reached();
    return follower(request, context);
  };
  const model = await serve(policy);
  const schema = `workmem_t_${randomBytes(6).toString('hex')}`;
  schemas.push(schema);
  const env = {
    WORKMEM_DATABASE_URL: postgres().url,
    WORKMEM_DATABASE_SCHEMA: schema,
    OPENAI_BASE_URL: model.baseURL,
    WORKMEM_MODEL: 'workmem-test',
  };
  const [a, b] = await Promise.all([startInstance(env), startInstance(env)]);
  return { a: a!, b: b!, schema, requests, hold };
}

/** A request the model holds until released; `waiting` resolves once one is held. */
class Hold {
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));
  private arrived!: () => void;
  readonly waiting = new Promise<void>((resolve) => (this.arrived = resolve));
  reached(): Promise<void> {
    this.arrived();
    return this.gate;
  }
  release(): void {
    this.open();
  }
}

async function create(instance: Instance): Promise<string> {
  const res = await fetch(`${instance.url}/sessions`, { method: 'POST', body: '{}' });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

type Answer = { status: 200; text: string } | { status: number; body: Record<string, unknown>; retryAfter: string | null };

/** A prompt to `instance`: the turn's text from its event stream, or the refusal. */
async function ask(instance: Instance, id: string, text: string): Promise<Answer> {
  const res = await fetch(`${instance.url}/sessions/${id}/prompt`, { method: 'POST', body: JSON.stringify({ text }) });
  if (res.status !== 200)
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get('retry-after') };
  const events = (await res.text())
    .split('\n\n')
    .filter(Boolean)
    .map((block) => JSON.parse(block.split('\n')[1]!.slice(6)) as { type: string; text?: string });
  const end = events.at(-1)!;
  expect(end.type).toBe('turn_end');
  return { status: 200, text: end.text! };
}

const userTexts = (request: ChatRequest) =>
  request.messages.filter((m) => m.role === 'user').map((m) => (m.content ?? '').split('\n\n<context_meta>')[0]);

describe.skipIf(!available)('the scale-out example: two instances, one PostgreSQL', () => {
  it("alternating one session's prompts between two instances continues the conversation; the lease moves at every request", async () => {
    const { a, b, schema, requests } = await twoInstances();
    expect(a.pid).not.toBe(b.pid);
    const id = await create(a);
    expect(await ask(a, id, 'My pet is a cat.')).toEqual({ status: 200, text: 'Noted: your pet is a cat.' });
    const before = requests.length;
    expect(await ask(b, id, 'What is my pet?')).toEqual({ status: 200, text: 'Your pet is a cat.' });
    // B's request carried what A did: A's exchange and the memory A's turn wrote.
    const fromB = requests[before]!;
    expect(userTexts(fromB)).toEqual(['My pet is a cat.', 'What is my pet?']);
    expect(fromB.messages[0]!.content).toContain('- pet: a cat');
    expect(await ask(b, id, 'My colour is teal.')).toEqual({ status: 200, text: 'Noted: your colour is teal.' });
    expect(await ask(a, id, 'What is my colour?')).toEqual({ status: 200, text: 'Your colour is teal.' });
    expect(await ask(a, id, 'What is my pet?')).toEqual({ status: 200, text: 'Your pet is a cat.' });
    const memory = (await (await fetch(`${b.url}/sessions/${id}/memory`)).json()) as { overview: string };
    expect(memory.overview).toContain('- pet: a cat');
    expect(memory.overview).toContain('- colour: teal');
    expect(
      (await fetch(`${b.url}/sessions/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/prompt`, { method: 'POST', body: '{"text":"hi"}' }))
        .status,
    ).toBe(404);

    // In the database: one log, every message once and in order, gap-free; the lease was taken
    // afresh for each of the 6 requests after the create (a token that grows at every takeover).
    const store = postgresStore({ connectionString: postgres().url, schema });
    try {
      const session = await store.open(id);
      const { entries } = await session.log.read();
      expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
      const said = entries.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [e.message.content] : []));
      expect(said).toEqual(['My pet is a cat.', 'What is my pet?', 'My colour is teal.', 'What is my colour?', 'What is my pet?']);
      expect(Number(session.lease.token)).toBe(1 + 6 + 1); // created, 6 requests, and this open
      await session.close();
    } finally {
      await store.close();
    }
  });

  it('a session busy in one instance is refused by the other with 409, holder and until, queued by the one that has it, and served anywhere after', async () => {
    const { a, b, hold } = await twoInstances();
    const id = await create(b);
    const slow = ask(a, id, 'Take your time. My city is Lyon.');
    await hold.waiting; // A's turn is at the model: A holds the lease
    const queued = ask(a, id, 'What is my city?'); // the same instance: it waits its turn there
    const refused = await ask(b, id, 'What is my city?');
    expect(refused.status).toBe(409);
    const body = (refused as { body: Record<string, unknown> }).body;
    expect(body).toMatchObject({ error: 'session_in_use', holder: `pid ${a.pid} on ${hostname()}` });
    expect(body.message).toMatch(new RegExp(`session ${id} is in use by pid ${a.pid} on .* until `));
    expect(Date.parse(String(body.until))).toBeGreaterThan(Date.now());
    expect((refused as { retryAfter: string | null }).retryAfter).toBe('1');
    expect((await fetch(`${b.url}/sessions/${id}/memory`)).status).toBe(409);

    hold.release();
    expect(await slow).toEqual({ status: 200, text: 'Noted: your city is Lyon.' });
    expect(await queued).toEqual({ status: 200, text: 'Your city is Lyon.' });
    // A gave the lease back when its last request ended: B serves the session now.
    expect(await ask(b, id, 'What is my city?')).toEqual({ status: 200, text: 'Your city is Lyon.' });
  });
});
