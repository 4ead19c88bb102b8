/**
 * The CLI and RPC faced with hostile input: a model (and a user) whose text carries
 * terminal escape sequences — OSC 52 clipboard writes, screen clears, window titles, 8-bit
 * C1 controls, a bare \r — and a session name with a newline that would forge a table
 * row; an RPC line with no newline, far over the 16 MB limit; an API key in the history,
 * a session name, a bad configuration value and a config.json that is not JSON; a database
 * password given as a flag, read back from /proc/<pid>/cmdline; a bracketed paste holding
 * keys and C1 controls, in chat on a terminal (tmux). Every command is the built CLI, spawned.
 * **lost** counts printed control sequences, forged rows and keys found.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startTestServer, type ChatRequest, type PolicyReply, type TestServer } from '../../src/testing/index.js';
import { Tmux, hasTmux } from '../cli/tmuxChat.js';
import { cmdlineWhileRunning, runCli, type CliResult } from '../cli/cliProcess.js';
import { Tally, type FamilyResult } from './report.js';

/** What a hostile model puts in its text, one of each kind. */
const SEQUENCES = [
  '\u001b]52;c;cm0gLXJmIH4=\u0007', // OSC 52: write the clipboard
  '\u001b]0;owned\u001b\\', // set the window title
  '\u001b[2J\u001b[3J\u001b[H', // clear the screen and the scrollback
  '\u009b31m', // 8-bit CSI
  '\u009d2;t\u009c', // 8-bit OSC
  '\u001bP$q\u001b\\', // DCS request
  'over\rwrite', // a bare carriage return
];
const HOSTILE = `Here ${SEQUENCES.join(' and ')} end.`;
/** Anything a terminal would act on: C0 but \n and \t, DEL, C1. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const KEY = 'sk-cliFAMILY-0123456789abcdefghijklmn';

/** config.json files that are not JSON, each with `key` where V8's message would quote the text around the error. */
export function brokenConfigs(key: string): string[] {
  return [
    `{"apiKey": ${key}}`, // unquoted: V8 quotes the text around the token
    `{"apiKey": "${key}" "model": "m"}`,
    `{"apiKey": "${key}", }`,
    `apiKey=${key}`,
    `{"model": "m",\n "apiKey": "${key.slice(0, 10)}\n${key.slice(10)}"}`,
    `{"apiKey": "${key}"}\ntrailing ${key}`,
    `"${key}`,
  ];
}

/** Any run of `n` characters of `key` past its `sk-` prefix found in `text`. */
export function keyPieces(text: string, key: string, n = 4): string[] {
  const pieces: string[] = [];
  for (let i = 3; i + n <= key.length; i++) if (text.includes(key.slice(i, i + n))) pieces.push(key.slice(i, i + n));
  return pieces;
}

function controls(text: string): number {
  return text.match(CONTROL)?.length ?? 0;
}

/** A model that writes the hostile text to overview.md when asked to remember, and answers with it. */
function hostileModel(request: ChatRequest): PolicyReply {
  const last = request.messages.at(-1)!;
  const said = typeof last.content === 'string' ? last.content : '';
  if (last.role === 'user' && said.includes('remember'))
    return {
      toolCalls: [
        {
          name: 'write',
          arguments: JSON.stringify({ path: 'working-memory/overview.md', content: `# Working Memory\n\n${HOSTILE}\n` }),
        },
      ],
    };
  return { content: HOSTILE };
}

/**
 * Pasted into the chat: keys a paste must not press (Ctrl-C, a command and Return, Esc,
 * Ctrl-D, an end marker and a command after it) and C0 and C1 controls.
 */
const HOSTILE_PASTE = 'before\u0003/new\nafter\u001b\n\u0004x\u0085y\u009b2Jz\u009d0;owned\u009cend\u001b[201~/new\nlast';
const PASTE_SENT = 'before/new\nafter\nxyzend/new\nlast';

/**
 * The hostile paste in `workmem chat` on a terminal (tmux): nothing is sent or run before
 * Enter, and then one message, without a control character. **lost**: turns or sessions
 * the paste started, and control characters sent.
 */
async function hostilePaste(tally: Tally, env: Record<string, string>, cwd: string, server: TestServer): Promise<void> {
  const tmux = new Tmux({ ...env, NO_COLOR: '1' });
  try {
    tmux.start([], cwd);
    await tmux.seen('/help for commands', 1, 20_000);
    await tmux.prompt();
    const before = server.requests.length;
    tmux.paste(HOSTILE_PASTE, cwd);
    await tmux.seen('… last');
    const early = server.requests.length - before;
    tmux.keys('Enter');
    await tmux.seen(/\[workmem-test · /);
    await tmux.prompt();
    tmux.keys('C-d');
    await tmux.until('exit', () => tmux.exitStatus() !== null);
    const users = server.requests
      .slice(before)
      .flatMap((r) => r.body.messages.filter((m) => m.role === 'user').map((m) => String(m.content).split('\n\n<context_meta>')[0]!));
    const sent = [...new Set(users)];
    const sessions = (tmux.screen().match(/session [0-9a-f-]{36} \(new\)/g) ?? []).length;
    const lost = early + (sessions - 1) + sent.reduce((n, m) => n + controls(m), 0);
    tally.add('terminal: a bracketed paste holding Ctrl-C, /new and Return, Esc, Ctrl-D, an end marker and C1 controls', {
      survived: lost === 0 && sent.length === 1 && sent[0] === PASTE_SENT,
      lost,
      detail: `${early} requests before Enter, ${sessions} sessions, sent ${JSON.stringify(sent).slice(0, 200)}`,
    });
  } finally {
    tmux.kill();
  }
}

export async function cliCases(options: { lineSizesMB?: number[] } = {}): Promise<FamilyResult> {
  const tally = new Tally('cli');
  const figures: string[] = [];
  const server = await startTestServer({ policy: hostileModel });
  const home = mkdtempSync(join(tmpdir(), 'workmem-cli-family-'));
  const cwd = mkdtempSync(join(tmpdir(), 'workmem-cli-cwd-'));
  const env = { WORKMEM_HOME: home, OPENAI_BASE_URL: server.baseURL, WORKMEM_MODEL: 'workmem-test', OPENAI_API_KEY: KEY };
  const printed = (fault: string, result: CliResult, extra: { lost?: number; detail?: string } = {}): void => {
    const leaked = controls(result.stdout) + controls(result.stderr);
    const lost = leaked + (extra.lost ?? 0);
    tally.add(fault, {
      survived: result.code === 0 && lost === 0,
      lost,
      detail: `exit ${result.code}, ${leaked} control characters printed${extra.detail ? `, ${extra.detail}` : ''}: ${JSON.stringify(result.stdout.slice(0, 300))}`,
    });
  };
  try {
    // Terminal: every command that prints what a model, a file or a user wrote.
    const name = `evil\n${'f'.repeat(8)}  2000-01-01 00:00  9  9  phase1  forged row \u001b]0;t\u0007`;
    const chat = await runCli(['chat', '--name', name], { env, cwd, input: `please remember this ${HOSTILE}\nhello\n/memory\n/exit\n` });
    printed('terminal: chat prints a hostile answer, memory and a user prompt', chat);
    const id = /session ([0-9a-f-]{36})/.exec(chat.stdout)?.[1] ?? 'missing';
    printed('terminal: run prints a hostile answer', await runCli(['run', 'hello'], { env, cwd }));
    printed('terminal: memory show prints a hostile overview.md', await runCli(['memory', 'show', id], { env, cwd }));
    printed('terminal: sessions show prints hostile messages and name', await runCli(['sessions', 'show', id], { env, cwd }));
    const list = await runCli(['sessions', 'list'], { env, cwd });
    // A caption, the header, and one row per session (two: the chat's and the run's).
    const forged = Math.max(0, list.stdout.trimEnd().split('\n').length - 4);
    printed('terminal: sessions list with a newline in a name', list, { lost: forged, detail: `${forged} forged rows` });

    // Masking: the key in the history, in a session name, in a bad configuration value.
    await runCli(['run', `my key is ${KEY}`], { env, cwd });
    const rpcInput = [
      { type: 'get_messages', id: 'm' },
      { type: 'new_session', id: 'n', name: `named ${KEY}` },
      { type: 'list_sessions', id: 'l', all: true },
    ];
    const rpc = await runCli(['rpc', '--continue'], { env, cwd, input: rpcInput.map((c) => JSON.stringify(c)).join('\n') + '\n' });
    const responses = rpc.stdout.split('\n').filter((l) => l.includes('"type":"response"'));
    for (const [command, fault] of [
      ['get_messages', 'masking: rpc get_messages after the key was typed'],
      ['list_sessions', 'masking: rpc list_sessions with the key in a name'],
    ] as const) {
      const line = responses.find((l) => l.includes(`"command":"${command}"`)) ?? '';
      const found = line.includes(KEY) ? 1 : 0;
      tally.add(fault, { survived: line.includes('"success":true') && !found, lost: found, detail: line.slice(0, 300) });
    }
    const configHome = mkdtempSync(join(tmpdir(), 'workmem-cli-config-'));
    writeFileSync(join(configHome, 'config.json'), JSON.stringify({ apiKey: KEY, model: 'm', baseURL: `not a url ${KEY}` }));
    for (const [fault, args, runEnv] of [
      ['masking: a key given as --base-url', ['run', 'hi', '--base-url', KEY], env],
      ['masking: a key in a bad config.json value', ['run', 'hi'], { ...env, WORKMEM_HOME: configHome, OPENAI_API_KEY: '' }],
      ['masking: a key as OPENAI_BASE_URL', ['run', 'hi'], { ...env, OPENAI_BASE_URL: KEY }],
    ] as const) {
      const result = await runCli([...args], { env: runEnv, cwd });
      const found = result.stderr.includes(KEY) ? 1 : 0;
      tally.add(fault, { survived: result.code === 2 && /is invalid/.test(result.stderr) && !found, lost: found, detail: result.stderr });
    }
    // A database password given as a flag: gone from the command line other local users read.
    if (existsSync('/proc/self/cmdline')) {
      const password = 'pw-cliFAMILY-cmdline-77';
      for (const form of [
        ['--database-url', `postgres://ada:${password}@127.0.0.1:1/db`],
        [`--database-url=postgres://ada:${password}@127.0.0.1:1/db`],
      ]) {
        const { cmdline, stderr } = await cmdlineWhileRunning(['viz', '--port', '0', '--home', home, ...form], 'workmem visualizer on');
        const shown = cmdline.includes(password) ? 1 : 0;
        tally.add('masking: a database password as --database-url, in /proc/<pid>/cmdline', {
          survived: !shown && /other local users can read it/.test(stderr),
          lost: shown,
          detail: `${cmdline} · ${stderr.slice(0, 200)}`,
        });
      }
    }
    // A config.json that is not JSON, under --debug (stack traces): V8 quotes the text around the error.
    let quoted = 0;
    let said = '';
    for (const text of brokenConfigs(KEY)) {
      writeFileSync(join(configHome, 'config.json'), text);
      const result = await runCli(['run', 'hi', '--debug'], { env: { ...env, WORKMEM_HOME: configHome, OPENAI_API_KEY: '' }, cwd });
      const pieces = keyPieces(result.stderr, KEY).length;
      quoted += pieces;
      if (result.code !== 2 || !/is not valid JSON: .*(line \d+, column \d+|ends too early)/.test(result.stderr) || pieces)
        said = result.stderr;
    }
    tally.add('masking: a key in a config.json that is not JSON, under --debug', {
      survived: said === '' && quoted === 0,
      lost: quoted,
      detail: said.slice(0, 300) || `${quoted} pieces of the key printed`,
    });
    rmSync(configHome, { recursive: true, force: true });

    if (hasTmux) await hostilePaste(tally, { ...env, WORKMEM_HOME: mkdtempSync(join(tmpdir(), 'workmem-cli-paste-')) }, cwd, server);

    // The RPC line limit: one error for the long line, then the next command is answered.
    for (const mb of options.lineSizesMB ?? [17]) {
      const input = `${'x'.repeat(mb * 1024 * 1024)}\n${JSON.stringify({ type: 'get_state', id: 'after' })}\n`;
      const started = performance.now();
      const result = await runCli(['rpc'], { env, cwd, input, timeoutMs: 120_000 });
      const seconds = (performance.now() - started) / 1000;
      const lines = result.stdout.trim().split('\n');
      const ok =
        result.code === 0 &&
        lines.length === 2 &&
        lines[0]!.includes('"error":"line 1 is longer than 16 MB; skipped"') &&
        lines[1]!.includes('"command":"get_state","success":true');
      tally.add(`rpc: a ${mb} MB line without a newline, then a command`, { survived: ok, detail: result.stdout.slice(0, 300) });
      figures.push(`rpc: a ${mb} MB line without a newline refused and the next command answered in ${seconds.toFixed(1)} s`);
    }
  } finally {
    await server.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(cwd, { recursive: true, force: true });
  }
  return tally.result(figures);
}
