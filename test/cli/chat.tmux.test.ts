/**
 * workmem chat on a real terminal: the built CLI runs in tmux (a server of its own, -L),
 * against the local test server; keys go in with send-keys, pastes with load-buffer and
 * paste-buffer -p (bracketed, as a terminal pastes), and the screen is read back with
 * capture-pane. (Run `npm run build` before this file alone.)
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { protocolFollower, startTestServer, type TestServer } from '../../src/testing/index.js';
import { CLEARED_NOTICE, EXIT_NOTICE, STOPPING_NOTICE } from '../../src/cli/lineEditor.js';
import { cliPath } from './cliProcess.js';
import { logEntries, tempHome } from '../helpers.js';
import { Tmux, escape, lastLine } from './tmuxChat.js';
import { HANG_MS } from '../hangGuard.js';

let server: TestServer;
let home: string;
let tmux: Tmux;
const cwd = tempHome();

/** The user messages the server received, each once, in order. */
function userMessages(): string[] {
  const seen: string[] = [];
  for (const r of server.requests)
    for (const m of r.body.messages)
      if (m.role === 'user' && typeof m.content === 'string' && !seen.includes(m.content)) seen.push(m.content);
  return seen;
}

/** The session's trace, read once the chat has ended. */
function traceEvents(dir: string): Record<string, any>[] {
  const sessions = join(dir, 'sessions');
  const files = readdirSync(sessions).flatMap((d) => readdirSync(join(sessions, d)).map((id) => join(sessions, d, id, 'trace.jsonl')));
  return files
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, 'utf8').trim().split('\n'))
    .map((line) => JSON.parse(line) as { k: string; event?: Record<string, any> })
    .filter((r) => r.k === 'event')
    .map((r) => r.event!);
}

/** The one session directory under a home. */
function onlySession(dir: string): string {
  const sessions = join(dir, 'sessions');
  const dirs = readdirSync(sessions).flatMap((d) => readdirSync(join(sessions, d)).map((id) => join(sessions, d, id)));
  expect(dirs).toHaveLength(1);
  return dirs[0]!;
}

/** The user's text as sent, without the tail the request adds to the last message. */
const withoutTail = (text: string): string => text.split('\n\n<context_meta>')[0]!;

beforeAll(async () => {
  expect(existsSync(cliPath()), 'build the CLI first: npm run build').toBe(true);
  server = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
});
afterAll(async () => server.close());
afterEach(() => tmux?.kill());

function startChat(args: string[] = [], extra: Record<string, string> = {}): Promise<string> {
  home = tempHome();
  tmux = new Tmux({ WORKMEM_HOME: home, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test', NO_COLOR: '1', ...extra });
  tmux.start(args, cwd);
  return tmux.seen('/help for commands').then(() => tmux.prompt());
}

// tmux is a prerequisite of the tmux project (test/project/preflight.ts): never skipped.
describe('chat in a terminal (tmux)', () => {
  it('a pasted block of 5 lines is one message and one turn; Enter sends it', async () => {
    await startChat();
    const before = server.requests.length;
    const lines = ['first line of the paste', 'second line', 'third line', 'fourth line', 'fifth line'];
    tmux.paste(lines.join('\n'), cwd);
    const screen = await tmux.seen('… fifth line');
    expect(server.requests.length).toBe(before); // a paste does not send
    expect(screen).toContain(`› ${lines[0]}\n… ${lines[1]}\n… ${lines[2]}\n… ${lines[3]}\n… ${lines[4]}`);
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · [\d,]+ \/ 32,768 tokens/);
    const sent = server.requests.slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(1);
    // Every request of the turn ends with the same user message, the 5 lines; none of the lines went alone.
    for (const r of sent) {
      const users = r.body.messages.filter((m) => m.role === 'user');
      expect(withoutTail(String(users.at(-1)!.content))).toBe(lines.join('\n'));
    }
    expect(
      userMessages()
        .map(withoutTail)
        .filter((m) => lines.some((l) => m.includes(l))),
    ).toEqual([lines.join('\n')]);

    // Typed lines: a trailing backslash continues, Ctrl-J inserts a newline.
    tmux.type('typed one\\');
    tmux.keys('Enter');
    tmux.type('typed two');
    tmux.keys('C-j');
    tmux.type('typed three');
    await tmux.seen('… typed three');
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · /, 2);
    expect(userMessages().map(withoutTail)).toContain('typed one\ntyped two\ntyped three');
    await tmux.prompt();
    tmux.keys('C-d');
    await tmux.until('exit', () => tmux.exitStatus() !== null);
    expect(tmux.exitStatus()).toBe(0);
    const turns = traceEvents(home).filter((e) => e.type === 'turn_start');
    expect(turns.map((t) => t.text)).toEqual([lines.join('\n'), 'typed one\ntyped two\ntyped three']);
  });

  it('Ctrl-C at the prompt clears the line and says so; a second Ctrl-C on the empty line exits', async () => {
    await startChat();
    const before = server.requests.length;
    tmux.type('a thought I drop');
    await tmux.seen('› a thought I drop');
    tmux.keys('C-c');
    const screen = await tmux.seen(CLEARED_NOTICE);
    expect(lastLine(screen)).toBe('›');
    expect(tmux.exitStatus()).toBeNull();
    // A key in between disarms: Ctrl-C on the empty line warns again.
    tmux.type('x');
    tmux.keys('BSpace', 'C-c');
    await tmux.seen(EXIT_NOTICE);
    expect(tmux.exitStatus()).toBeNull();
    tmux.keys('C-c');
    await tmux.until('exit', () => tmux.exitStatus() !== null);
    expect(tmux.exitStatus()).toBe(0);
    expect(server.requests.length).toBe(before); // nothing was sent
  });

  it('Esc stops a running turn and the chat goes on; Ctrl-C during a turn stops it too', async () => {
    await startChat();
    server.inject({ type: 'stall', afterChunks: 3, ms: HANG_MS });
    tmux.type('Tell me a story.');
    tmux.keys('Enter');
    await tmux.seen('● ');
    tmux.keys('Escape');
    await tmux.seen('(stopped)'); // the stall outlasts the test: only Esc ends the turn
    await tmux.prompt();
    expect(tmux.exitStatus()).toBeNull();

    server.inject({ type: 'stall', afterChunks: 3, ms: HANG_MS });
    tmux.type('Another story.');
    tmux.keys('Enter');
    await tmux.seen('● ', 2);
    tmux.keys('C-c');
    await tmux.seen('(stopped)', 2);
    await tmux.seen('(stopping the turn — Ctrl-C again to exit)');
    await tmux.prompt();
    expect(tmux.exitStatus()).toBeNull();

    tmux.type('My cat is Tom.');
    tmux.keys('Enter');
    await tmux.seen('Noted: your cat is Tom.');
    tmux.type('/exit');
    tmux.keys('Enter');
    await tmux.until('exit', () => tmux.exitStatus() !== null);
    const ends = traceEvents(home).filter((e) => e.type === 'turn_end');
    expect(ends.map((e) => e.status)).toEqual(['aborted', 'aborted', 'done']);
  });

  it('/context shows the last request by part, with the figures of its prompt_built event, and what compactions archived where', async () => {
    await startChat(['--mode', 'phase1']); // pinned: automatic switching would leave phase 1 after the first memory write
    tmux.type('/context');
    tmux.keys('Enter');
    await tmux.seen('Context of the next request (an estimate before your message: turn 1) · phase1');
    const said = ['My dog is Rex.', 'My cat is Tom.', 'I live in Oslo.', 'My car is red.', 'I like tea.', 'My bike is blue.'];
    for (const [i, text] of said.entries()) {
      tmux.type(text);
      tmux.keys('Enter');
      await tmux.seen(/\[workmem-test · [\d,]+ \/ 32,768 tokens/, i + 1);
    }
    tmux.type('/compact');
    tmux.keys('Enter');
    await tmux.seen(/⤓ compacted \(manual\)/);
    tmux.type('What is my dog?');
    tmux.keys('Enter');
    await tmux.seen('Your dog is Rex.');
    tmux.type('/context');
    tmux.keys('Enter');
    await tmux.seen('Context of the last request');
    tmux.type('/mode phase2');
    tmux.keys('Enter');
    tmux.type('What is my cat?');
    tmux.keys('Enter');
    await tmux.seen('Your cat is Tom.');
    tmux.type('/context');
    tmux.keys('Enter');
    await tmux.seen('Context of the last request', 2);
    await tmux.prompt();
    const screen = tmux.screen();
    tmux.type('/exit');
    tmux.keys('Enter');
    await tmux.until('exit', () => tmux.exitStatus() !== null);

    const built = traceEvents(home).filter((e) => e.type === 'prompt_built');
    const outputs = screen.split('Context of the last request: ').slice(1);
    expect(outputs).toHaveLength(2);
    const modes: string[] = [];
    for (const output of outputs) {
      const [, turn, request, mode] = /^turn (\d+), request (\d+) · (\w+)/.exec(output)!;
      const event = built.find((e) => e.turn === Number(turn) && e.request === Number(request))!;
      expect(event, `a prompt_built for turn ${turn}, request ${request}`).toBeDefined();
      // The last request of its turn: the latest built before /context was typed.
      expect(built.filter((e) => e.turn === Number(turn)).at(-1)).toBe(event);
      modes.push(mode!);
      expect(mode).toBe(event.mode);
      const figure = (label: string): number => {
        const match = new RegExp(`^  ${escape(label)}\\s+(-?[\\d,]+)`, 'm').exec(output);
        expect(match, `a row for ${label}`).not.toBeNull();
        return Number(match![1]!.replaceAll(',', ''));
      };
      const t = event.tokens;
      expect(figure('system prompt')).toBe(t.system);
      expect(figure('working memory') + figure('detail index')).toBe(t.memory);
      expect(figure(`history · ${mode}`)).toBe(t.history);
      expect(figure('tail')).toBe(t.tail);
      expect(figure('total')).toBe(t.total);
      expect(output).toMatch(new RegExp(`^  total\\s+[\\d,]+\\s+${t.percent} %\\s+of ${t.window.toLocaleString('en-US')} tokens`, 'm'));
      const [from, to] = event.range as [number, number];
      expect(output).toMatch(new RegExp(`messages ${from + 1}–${to} of \\d+`));
      // The bar: 60 cells, the 75 % line, the output reserve at the end.
      const bar = /^  \[([SMDHT·|r]{60})\]$/m.exec(output)![1]!;
      expect(bar.indexOf('|')).toBe(45);
      expect(bar.endsWith('r')).toBe(true);
      expect(output).toContain('| 75 % (24,576 tokens)');
      // The compaction: listed with its file, which exists, and its note in the history carried (phase 1).
      const compacted = /^  turn \d+ \(manual\): (\d+) items, history [\d,]+ → [\d,]+ tokens → (\S+)$/m.exec(output);
      expect(compacted, 'the compaction, with its file').not.toBeNull();
      const file = compacted![2]!;
      const sessionDir = readdirSync(join(home, 'sessions')).map((d) => join(home, 'sessions', d));
      expect(
        sessionDir.some((d) =>
          readdirSync(d).some((id) => existsSync(join(d, id, file)) || existsSync(join(d, id, 'working-memory', file))),
        ),
      ).toBe(true);
      if (mode === 'phase1')
        expect(output).toMatch(new RegExp(`^  message 1 \\(turn 1, [\\d,]+ tokens\\): a note for archived turns → ${escape(file)}$`, 'm'));
    }
    expect(modes).toEqual(['phase1', 'phase2']);
  });

  it('--no-session: the chat works and /context too; nothing is left in the home or the temporary directory', async () => {
    const tmp = tempHome();
    await startChat(['--no-session'], { TMPDIR: tmp });
    await tmux.seen('--no-session: nothing is kept');
    expect(readdirSync(tmp).filter((f) => f.startsWith('workmem-throwaway-'))).toHaveLength(1);
    tmux.type('My dog is Rex.');
    tmux.keys('Enter');
    await tmux.seen('Noted: your dog is Rex.');
    tmux.type('/context');
    tmux.keys('Enter');
    await tmux.seen('Context of the last request: turn 1');
    await tmux.prompt();
    tmux.keys('C-c');
    await tmux.seen(EXIT_NOTICE);
    tmux.keys('C-c');
    await tmux.until('exit', () => tmux.exitStatus() !== null);
    expect(tmux.exitStatus()).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
    expect(existsSync(home) ? readdirSync(home) : []).toEqual([]);
    tmux.kill();

    // The terminal closes under a running chat (a hang-up; every write then fails): nothing is left either.
    await startChat(['--no-session'], { TMPDIR: tmp });
    expect(readdirSync(tmp)).toHaveLength(1);
    tmux.type('My cat is Tom.');
    tmux.keys('Enter');
    await tmux.seen('Noted: your cat is Tom.');
    tmux.kill();
    await tmux
      .until('the temporary home removed', () => readdirSync(tmp).length === 0)
      .catch((error: Error) => {
        throw new Error(`${error.message}\nleft: ${readdirSync(tmp, { recursive: true }).join(', ')}`);
      });
  });

  /** The texts of the session's turns, from its trace, once the chat has ended. */
  async function exitAndTurns(): Promise<string[]> {
    await tmux.prompt();
    tmux.keys('C-d');
    await tmux.until('exit', () => tmux.exitStatus() !== null);
    return traceEvents(home)
      .filter((e) => e.type === 'turn_start')
      .map((e) => String(e.text));
  }

  it('round 3 #7: a Ctrl-C, Esc, Return, Ctrl-D or an end marker inside a bracketed paste is text: no command runs, nothing is sent until Enter', async () => {
    await startChat();
    const before = server.requests.length;
    tmux.paste('first line\u0003/new\nsecond\u001b\nthird\u0004 end', cwd);
    await tmux.seen('… third end');
    // An end marker inside the pasted text: what follows it in the same burst is pasted text too.
    tmux.paste(', more\u001b[201~/new\nafter the marker', cwd);
    await tmux.seen('… after the marker');
    expect(server.requests.length).toBe(before);
    expect(tmux.screen()).not.toContain(CLEARED_NOTICE);
    expect(tmux.screen().match(/session [0-9a-f-]{36} \(new\)/g)).toHaveLength(1); // no /new ran
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · /);
    // A paste whose end never came: a Ctrl-C once it has been quiet for a second leaves it (and clears the line).
    await tmux.prompt();
    tmux.type('\u001b[200~half a paste');
    await new Promise((r) => setTimeout(r, 1_500));
    tmux.keys('C-c');
    await tmux.seen(CLEARED_NOTICE);
    tmux.type('after');
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · /, 2);
    expect(await exitAndTurns()).toEqual(['first line/new\nsecond\nthird end, more/new\nafter the marker', 'after']);
  });

  it('round 3 #8: C1 controls in a paste are neither drawn nor sent, a C1 sequence dropped whole', async () => {
    await startChat();
    tmux.paste('a\u0085b\u009b2Jc\u009d0;owned\u009cd and more', cwd);
    const screen = await tmux.seen('› abcd and more');
    expect(screen).not.toContain('owned');
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · /);
    expect(await exitAndTurns()).toEqual(['abcd and more']);
    expect(userMessages().map(withoutTail)).toContain('abcd and more');
  });

  it('round 3 #9: after a 900 KB paste a key redraws a screenful, not the paste, and Enter sends the paste whole', async () => {
    await startChat();
    const lines = Array.from({ length: 9_000 }, (_, i) => `line ${String(i).padStart(4, '0')} ${'of a long paste '.repeat(6)}`.trimEnd());
    const text = lines.join('\n');
    expect(text.length).toBeGreaterThan(900_000);
    tmux.paste(text, cwd);
    await tmux.seen(`… ${lines.at(-1)!}`);
    const drawn = join(tempHome(), 'drawn.bin');
    tmux.recordOutput(drawn);
    tmux.type('X');
    await tmux.seen(`${lines.at(-1)!}X`);
    tmux.keys('Left', 'Left', 'Up');
    await new Promise((r) => setTimeout(r, 500));
    tmux.stopRecording();
    const bytes = existsSync(drawn) ? statSync(drawn).size : 0;
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(4 * 120 * 50 * 4); // four keys, each at most a 120×50 screen of 4-byte characters
    const screen = tmux.screen();
    expect(screen).toMatch(/\(… [\d,]+ rows above\)/);
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · /);
    // Over the test model's window, the turn fails; the message was taken whole all the same.
    await exitAndTurns();
    const sent = logEntries(onlySession(home)).find((e) => e.type === 'message' && e.message.role === 'user');
    expect(sent?.type === 'message' && sent.message.content === `${text}X`).toBe(true);
  });

  it('round 3 new user: Ctrl-C during a turn: the answer ends before the "stopping" notice, as kept, and nothing of it follows', async () => {
    // A long answer, slowly: the turn is still streaming when Ctrl-C comes, however busy the machine.
    const story = `Once upon a time ${'there was a story that went on and on. '.repeat(100)}The end.`;
    const slow = await startTestServer({ policy: () => ({ content: story }), chunkDelayMs: 20 });
    try {
      // With a key the answer is streamed through a masking window: the stop releases what the window held.
      await startChat([], { OPENAI_API_KEY: 'sk-test-0123456789abcdefghijklmnopqrstuvwxyz0123', OPENAI_BASE_URL: slow.baseURL });
      tmux.type('Tell me a story.');
      tmux.keys('Enter');
      await tmux.seen('Once upon a time there was a story');
      tmux.keys('C-c');
      await tmux.seen('(stopped)');
    } finally {
      await slow.close();
    }
    const screen = await tmux.prompt();
    const shown = screen.slice(screen.indexOf('● ') + 2);
    expect(shown).toMatch(new RegExp(`^[^\\n]*\\n${escape(STOPPING_NOTICE)}\\n\\(stopped\\)\\n\\[workmem-test`));
    await exitAndTurns();
    const kept = logEntries(onlySession(home)).find((e) => e.type === 'message' && e.stop === 'aborted');
    expect(kept?.type === 'message' && shown.split('\n')[0]!.trimEnd()).toBe(
      String(kept?.type === 'message' && kept.message.content).trimEnd(),
    );
  });
});
