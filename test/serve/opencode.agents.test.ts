/**
 * opencode (`opencode-ai` on npm, an agent no one here wrote) through `workmem serve` with its
 * default tools and settings: an `@ai-sdk/openai-compatible` provider in its opencode.json
 * pointed at the proxy, the proxy's token as its key, `opencode run` one turn per process,
 * continuing its own session (`-c`). Its tools read, write and edit keep their names (workmem's
 * are sent as workmem_read, …); the scripted model drives its bash, read and glob calls; its
 * title requests are side requests (passed through, no session); its resumed runs stay in one
 * session with its memory, and a second conversation never sees the first one's. Installed
 * into a cache of its own as pi's test installs pi (never a dependency). Offline: its fetch
 * of models.dev and its update check are turned off (nothing of what it sends changes).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { installedOnce } from '../installedOnce.js';
import {
  calledTools,
  conversationTurns,
  expectApart,
  OTHER_TURNS,
  requestsUnder,
  runAgent,
  servedAgents,
  type AgentRun,
} from './agentRuns.js';

const VERSION = '1.18.33';
const platform = process.platform === 'win32' ? 'windows' : process.platform;
const BINARY = join(
  'node_modules',
  `opencode-${platform}-${process.arch}`,
  'bin',
  process.platform === 'win32' ? 'opencode.exe' : 'opencode',
);
let OPENCODE = '';
const served = servedAgents();

beforeAll(() => {
  OPENCODE = join(installedOnce(`workmem-test-opencode-${VERSION}`, [`opencode-ai@${VERSION}`], BINARY), BINARY);
});

describe('opencode through workmem serve, its defaults', () => {
  it(
    'runs 8 turns with its tools, resumed run after run in one session; another conversation sees none of its memory; titles create nothing',
    async () => {
      const { server, proxy, home } = await served();
      const work = mkdtempSync(join(tmpdir(), 'workmem-opencode-'));
      const project = join(work, 'project');
      mkdirSync(project);
      writeFileSync(join(project, 'notes.txt'), 'hello from the notes\n');
      writeFileSync(
        join(project, 'opencode.json'),
        JSON.stringify({
          $schema: 'https://opencode.ai/config.json',
          provider: {
            workmem: {
              npm: '@ai-sdk/openai-compatible',
              name: 'workmem',
              options: { baseURL: proxy.url, apiKey: proxy.token },
              models: { 'workmem-test': { name: 'workmem test', limit: { context: 128_000, output: 4_000 } } },
            },
          },
          model: 'workmem/workmem-test',
        }),
      );
      const env = {
        PATH: process.env.PATH,
        HOME: join(work, 'home'),
        // Offline: no models.dev catalogue, no update check.
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_AUTOUPDATE: '1',
      };
      const opencode = (text: string, resume: boolean): Promise<AgentRun> =>
        runAgent(OPENCODE, ['run', ...(resume ? ['-c'] : []), text], { env, cwd: project });
      const turns = conversationTurns([
        'Use the bash tool with {"command":"echo hi","description":"Say hi"}.',
        `Use the read tool with {"filePath":"${join(project, 'notes.txt')}"}.`,
        'Use the glob tool with {"pattern":"*.txt"}.',
      ]);
      const runs: AgentRun[] = [];
      for (const [i, text] of turns.entries()) {
        const run = await opencode(text, i > 0);
        expect(run.code, `${run.stderr}\n${proxy.output()}`).toBe(0);
        runs.push(run);
      }
      expect(runs[6]!.stdout).toContain('rose1');
      expect(runs[7]!.stdout).toContain('rose3');
      // Another conversation of the same agent, in the same project.
      const other = [await opencode(OTHER_TURNS[0], false), await opencode(OTHER_TURNS[1], true)];
      for (const run of other) expect(run.code, run.stderr).toBe(0);
      expect(other[1]!.stdout).not.toContain('rose1');
      const first = await expectApart(home, expect);
      // Its own tools ran under their names; workmem's memory was written under its workmem_ name.
      expect(calledTools(first.log)).toEqual(expect.arrayContaining(['bash', 'read', 'glob', 'workmem_write']));
      // Its title requests went through as it sent them: no memory in them.
      const titles = requestsUnder(server, 'You are a title generator');
      expect(titles.length).toBeGreaterThanOrEqual(2);
      for (const title of titles) expect(JSON.stringify(title.body)).not.toContain('<working_memory');
    },
    40 * 60_000,
  );
});
