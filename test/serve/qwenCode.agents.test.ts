/**
 * Qwen Code (`@qwen-code/qwen-code` on npm) through `workmem serve` with its default tools and
 * settings: OPENAI_BASE_URL, OPENAI_API_KEY (the proxy's token) and OPENAI_MODEL, `--auth-type
 * openai`, one turn per process (`-p`), continuing its own session (`-c`). Its first user message
 * carries the date and the project's files, rebuilt on every run: when a file appears between
 * runs, the session goes on all the same, with its memory. Its background memory extraction
 * (other instructions over the conversation's messages, with write_file and edit) is a side
 * request: passed through, the session's memory neither read nor written, nothing created. A
 * second conversation never sees the first one's memory. Installed into a cache of its own as
 * pi's test installs pi (never a dependency); it declares Node 22 and runs on 20.
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

const VERSION = '0.24.4';
const CLI = join('node_modules', '@qwen-code', 'qwen-code', 'cli-entry.js');
let QWEN = '';
const served = servedAgents();

beforeAll(() => {
  QWEN = join(installedOnce(`workmem-test-qwen-code-${VERSION}`, [`@qwen-code/qwen-code@${VERSION}`], CLI), CLI);
});

describe('Qwen Code through workmem serve, its defaults', () => {
  it(
    'runs 8 turns with its tools, resumed run after run in one session though its opening changes; side requests and another conversation see none of it',
    async () => {
      const { server, proxy, home } = await served();
      const work = mkdtempSync(join(tmpdir(), 'workmem-qwen-'));
      const project = join(work, 'project');
      mkdirSync(project);
      writeFileSync(join(project, 'notes.txt'), 'hi from the notes\n');
      mkdirSync(join(work, 'home'));
      const env = {
        PATH: process.env.PATH,
        HOME: join(work, 'home'),
        OPENAI_BASE_URL: proxy.url,
        OPENAI_API_KEY: proxy.token,
        OPENAI_MODEL: 'workmem-test',
      };
      const qwen = (text: string, resume: boolean): Promise<AgentRun> =>
        runAgent(process.execPath, [QWEN, '--auth-type', 'openai', ...(resume ? ['-c'] : []), '-p', text], { env, cwd: project });
      const turns = conversationTurns([
        'Use the glob tool with {"pattern":"*.txt"}.',
        `Use the read_file tool with {"file_path":"${join(project, 'notes.txt')}"}.`,
        'Use the grep_search tool with {"pattern":"hi"}.',
      ]);
      const runs: AgentRun[] = [];
      for (const [i, text] of turns.entries()) {
        // A file appears between runs: the project listing in its first message changes.
        if (i === 4) writeFileSync(join(project, 'later.txt'), 'written between two runs\n');
        const run = await qwen(text, i > 0);
        expect(run.code, `${run.stderr}\n${proxy.output()}`).toBe(0);
        runs.push(run);
      }
      expect(runs[6]!.stdout).toContain('rose1');
      expect(runs[7]!.stdout).toContain('rose3');
      const other = [await qwen(OTHER_TURNS[0], false), await qwen(OTHER_TURNS[1], true)];
      for (const run of other) expect(run.code, run.stderr).toBe(0);
      expect(other[1]!.stdout).not.toContain('rose1');
      const first = await expectApart(home, expect);
      expect(calledTools(first.log)).toEqual(expect.arrayContaining(['glob', 'read_file', 'grep_search', 'write']));
      // Its memory extraction went through as it sent it: under its own instructions, with no memory of the session's.
      const extractions = requestsUnder(server, 'You are now acting as the managed memory extraction');
      expect(extractions.length).toBeGreaterThan(0);
      for (const request of extractions) expect(JSON.stringify(request.body)).not.toContain('<working_memory');
      // Its first message changed when the file appeared: the session followed it (a branch from there), not another session.
      expect(first.log.some((e) => e.type === 'branch' && e.after === 0)).toBe(true);
    },
    40 * 60_000,
  );
});
