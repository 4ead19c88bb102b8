/**
 * Secrets and permissions. An API key reaches workmem by every road we know of — a
 * server error quoting it, the model echoing it, a tool printing the environment, the
 * user pasting it, a key shaped like OpenAI's that workmem was never told about — and
 * must then appear nowhere: not in any file under the workmem home (log, meta, trace,
 * detail/ files, the SQLite store), not in events or turn results, not in the CLI's
 * output. Every directory workmem creates is 0700, every file 0600.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { createSession } from '../../src/session/index.js';
import { startTestServer, type PolicyReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/tool.js';
import { runCli } from '../cli/cliProcess.js';
import { entriesUnder } from './checks.js';
import { Tally, type FamilyResult } from './report.js';

const CLIENT_KEY = 'sk-proj-clientKEY0123456789abcdefghij';
const ENV_KEY = 'sk-envKEY-9876543210zyxwvutsrqponm';
const STRAY_KEY = 'sk-strayKEY-abcdefghij0123456789ZZ';
const HOST_SECRET = 'host-db-password-Qx7!"quoted\\slash';
const ALL = [CLIENT_KEY, ENV_KEY, STRAY_KEY, HOST_SECRET];

/** Where any secret (or its JSON-escaped form) occurs among the files under `dir`. */
function filesWithSecrets(dir: string, secrets: readonly string[] = ALL): string[] {
  const needles = secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]).map((s) => Buffer.from(s));
  const found: string[] = [];
  for (const { full, rel, entry } of entriesUnder(dir)) {
    if (!entry.isFile()) continue;
    const bytes = readFileSync(full);
    if (needles.some((n) => bytes.includes(n))) found.push(rel);
  }
  return found;
}

/** Entries under `dir` whose mode is not 0700 (directories) or 0600 (files). */
function loosePermissions(dir: string): string[] {
  const loose: string[] = [];
  for (const { full, rel, entry } of entriesUnder(dir)) {
    const mode = statSync(full).mode & 0o777;
    if (mode !== (entry.isDirectory() ? 0o700 : 0o600)) loose.push(`${rel} is ${mode.toString(8)}`);
  }
  return loose;
}

const mentions = (text: string, secrets: readonly string[] = ALL): boolean => secrets.some((s) => text.includes(s));

export async function secretCases(): Promise<FamilyResult> {
  const tally = new Tally('secrets');
  const scenarios: [string, string][] = [
    ['the server answers an error that quotes the key', 'fail quoting the key'],
    ['the model echoes the keys in its answer', 'echo the keys'],
    ['a host tool prints the environment', 'print the environment'],
    ['the user pastes the keys', `here are my keys: ${CLIENT_KEY} ${ENV_KEY} ${STRAY_KEY} and ${HOST_SECRET}`],
    ['the model writes the keys into overview.md and detail/', 'remember the keys'],
    ['the model stores the keys as items (item memory, the state store)', 'keep the keys as items'],
  ];
  const server = await startTestServer({
    policy: (request): PolicyReply => {
      const last = request.messages.at(-1)!;
      const text = typeof last.content === 'string' ? last.content : '';
      if (last.role === 'tool') return { content: `Done; the output was: ${text.slice(0, 200)}` };
      if (text.startsWith('fail')) throw new Error(`Incorrect API key provided: ${CLIENT_KEY}, env ${ENV_KEY}, ${HOST_SECRET}`);
      if (text.startsWith('echo')) return { content: `Your keys are ${CLIENT_KEY}, ${ENV_KEY}, ${STRAY_KEY} and ${HOST_SECRET}.` };
      if (text.startsWith('keep'))
        return {
          content: 'Keeping.',
          toolCalls: [
            { name: 'remember', arguments: JSON.stringify({ content: `keys ${CLIENT_KEY} ${ENV_KEY} ${HOST_SECRET}`, importance: 0.9 }) },
          ],
        };
      if (text.startsWith('print')) return { content: 'Looking.', toolCalls: [{ name: 'print_env', arguments: '{}' }] };
      if (text.startsWith('remember'))
        return {
          content: 'Saving.',
          toolCalls: [
            {
              name: 'write',
              arguments: JSON.stringify({ path: 'overview.md', content: `# Overview\n- key ${CLIENT_KEY} ${STRAY_KEY}\n` }),
            },
            { name: 'write', arguments: JSON.stringify({ path: 'detail/keys.md', content: `${ENV_KEY}\n${HOST_SECRET}\n` }) },
          ],
        };
      return { content: 'I will not repeat secrets.' };
    },
  });
  const printEnv = defineTool({
    name: 'print_env',
    description: 'Print the environment (a careless host tool).',
    parameters: z.object({}),
    execute: () => `OPENAI_API_KEY=${ENV_KEY}\nCLIENT=${CLIENT_KEY}\nOTHER=${STRAY_KEY}\nDB=${HOST_SECRET}\n`,
  });

  for (const [fault, prompt] of scenarios) {
    const home = mkdtempSync(join(tmpdir(), 'workmem-secrets-'));
    const problems: string[] = [];
    try {
      const llm = openaiChat({ baseURL: server.baseURL, apiKey: CLIENT_KEY, model: 'gpt-4o', env: {} });
      const session = await createSession({
        llm,
        home,
        cwd: '/secrets',
        env: { OPENAI_API_KEY: ENV_KEY },
        secrets: [HOST_SECRET],
        tools: [printEnv],
        itemMemory: { inject: {} },
        settings: { retry: { maxRetries: 0 } },
      });
      const seen: string[] = [];
      session.on('*', (e) => seen.push(JSON.stringify(e)));
      const result = await session.prompt(prompt);
      await session.close();
      if (seen.some((e) => mentions(e))) problems.push('an event carried a secret');
      if (mentions(JSON.stringify(result))) problems.push('the turn result carried a secret');
      const files = filesWithSecrets(home);
      if (files.length) problems.push(`secrets written to ${files.join(', ')}`);
      const loose = loosePermissions(home);
      if (loose.length) problems.push(`loose permissions: ${loose.slice(0, 5).join(', ')}`);
    } catch (error) {
      problems.push(`threw: ${(error as Error).message}`);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    tally.add(
      fault,
      { survived: problems.length === 0, lost: problems.length ? 1 : 0, detail: problems.join('; ') },
      'nowhere in files, events or results; 0700/0600',
    );
  }

  // The CLI: a failing `workmem run` prints the error; it must not print a key. (It is
  // told of $OPENAI_API_KEY only; the others are caught by their shape.)
  {
    const home = mkdtempSync(join(tmpdir(), 'workmem-secrets-cli-'));
    writeFileSync(join(home, 'config.json'), '{ "maxRetries": 0 }\n', { mode: 0o600 });
    const run = await runCli(['run', '--json', 'fail quoting the key'], {
      env: { HOME: home, WORKMEM_HOME: home, OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: ENV_KEY },
    });
    const output = { code: run.code, text: run.stdout + run.stderr };
    const problems: string[] = [];
    const keys = [CLIENT_KEY, ENV_KEY, STRAY_KEY];
    if (mentions(output.text, keys)) problems.push('the CLI printed a key');
    if (output.code === 0) problems.push('the CLI exited 0 on a failed turn');
    const files = filesWithSecrets(home, keys);
    if (files.length) problems.push(`keys written to ${files.join(', ')}`);
    rmSync(home, { recursive: true, force: true });
    tally.add(
      'workmem run --json on a server error quoting the key',
      { survived: problems.length === 0, lost: problems.length ? 1 : 0, detail: problems.join('; ') },
      'stdout and stderr clean',
    );
  }
  await server.close();
  return tally.result();
}
