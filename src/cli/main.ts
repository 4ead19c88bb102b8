/**
 * The workmem command. Only node:util and the help texts load before a command is chosen,
 * so `workmem --help` starts fast; each command is imported when it runs.
 * Exit codes: 0 done, 1 failed, 2 bad usage or configuration.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DATABASE_URL_WARNING } from './processTitle.js';
import { terminalLine } from './terminalText.js';
import { EVAL_OPTIONS, EVAL_USAGE } from './evalHelp.js';
import { DATABASE_HELP, DATABASE_OPTIONS, INSPECT_HELP } from './sharedHelp.js';
import { SERVE_OPTIONS, SERVE_USAGE } from './serveHelp.js';

import type { CliIO, Flags } from './cliIO.js';

export type { CliIO, Flags };
type Options = NonNullable<ParseArgsConfig['options']>;

const MODEL_OPTIONS: Options = {
  home: { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'context-window': { type: 'string' },
  'max-output-tokens': { type: 'string' },
  'compaction-model': { type: 'string' },
  mode: { type: 'string' },
  language: { type: 'string' },
  compaction: { type: 'string' },
  'recent-turns': { type: 'string' },
  'memory-position': { type: 'string' },
  'recent-turns-step': { type: 'string' },
  'fallback-target': { type: 'string' },
  'session-write-quota': { type: 'string' },
  ...DATABASE_OPTIONS,
};
const SESSION_OPTIONS: Options = {
  session: { type: 'string' },
  continue: { type: 'boolean', short: 'c' },
  inspect: { type: 'boolean' },
  'inspect-port': { type: 'string' },
};
/** The protocol's documentation, shipped in the package: its path from here, src/ or dist/src/. */
const RPC_DOC = fileURLToPath(
  new URL(import.meta.url.endsWith('/dist/src/cli/main.js') ? '../../../docs/rpc.md' : '../../docs/rpc.md', import.meta.url),
);
const ALWAYS: Options = { help: { type: 'boolean', short: 'h' }, debug: { type: 'boolean' } };

const MODEL_HELP = `Model and configuration (flags > env > <home>/config.json):
  --model <name>              model name (env WORKMEM_MODEL; default gpt-4o-mini);
                              testing:<profile> (diligent, lazy, forgetful, eager,
                              sloppy, realistic) plays one offline, with no key
  --base-url <url>            any OpenAI-compatible endpoint (env OPENAI_BASE_URL)
                              the API key comes from OPENAI_API_KEY
  --context-window <tokens>   override the model's window
  --max-output-tokens <n>     tokens reserved for each answer
  --compaction-model <name>   a separate model for compaction summaries
  --mode <auto|phase1|phase2|hybrid>   pin the history mode (default auto)
  --language <en|zh>          language of the memory template and reminders
  --compaction <llm|auto>     who compacts: the model (default) or the system
  --recent-turns <n>          whole turns phase 2 keeps before the active one
                              (env WM_RECENT_TURNS; default 1; 0: the active turn only)
  --recent-turns-step <k>     phase 2's window holds its first turn until the
                              memory changes, up to recent-turns + k - 1 earlier
                              turns, so requests share a cached prefix (env
                              WM_RECENT_TURNS_STEP; default 1: moves every turn)
  --fallback-target <budget|recent-turns>
                              how far the system's compaction at 75 % goes: to
                              2/3 of the threshold (default), or all but the last
                              keepRecentTurns (3) turns (env WM_FALLBACK_TARGET)
  --memory-position <before-history|after-history|by-phase>
                              where requests carry the working memory (env
                              WM_MEMORY_POSITION; default before-history;
                              by-phase: after the history in phase 1, before it
                              in phase 2 and hybrid)
  --session-write-quota <bytes>
                              what the model's files may hold in working memory
                              over a session; a write past it is refused and the
                              model told how to make room (env
                              WM_SESSION_WRITE_QUOTA; default 33554432, 32 MB)
  --home <dir>                where sessions live (env WORKMEM_HOME; default ~/.workmem)
${DATABASE_HELP}
  --debug                     show stack traces

Timeouts: an answer must begin within timeoutMs (config.json; default 120 s;
firstByteTimeoutMs sets this wait apart) plus 50 ms per prompt token on a local
server (a loopback or private address; 1 ms on a hosted one; config.json's
firstByteMsPerPromptToken sets it): a model on a CPU reads the whole prompt before it sends
anything (a 3B model on two cores: ~34 tokens/s, ~100 s for 3.3k tokens). Once
it has begun, it may be silent at most timeoutMs between chunks. A timeout
before the first output that the prompt's length explains is not retried: the
error says what was waited for.`;

interface Command {
  summary: string;
  usage: string;
  options: Options;
  load: () => Promise<{ main(args: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> }>;
}

const COMMANDS: Record<string, Command> = {
  chat: {
    summary: 'an interactive session, streamed',
    usage: `workmem chat [--continue | --session <id> | --no-session] [--name <name>]

Talk to the model in a session with working memory. Slash commands: /memory /context
/detail /compact [conversation|tools|all] /mode [auto|phase1|phase2|hybrid] /sessions
/new /resume <id> /help /exit. Enter sends; a pasted block is one message; a line ending
in \\ continues, and Ctrl-J or Alt-Enter start a new line. Ctrl-C clears the line, and
on an empty line a second Ctrl-C exits; Esc or Ctrl-C stops a running turn.

  -c, --continue      resume the newest session of this directory
  --session <id>      resume a session (an id or its first characters)
  --name <name>       name a new session
  --no-session        a throwaway chat: kept in a temporary home, removed at exit
${INSPECT_HELP}`,
    options: { ...SESSION_OPTIONS, name: { type: 'string' }, 'no-session': { type: 'boolean' } },
    load: () => import('./chat.js'),
  },
  run: {
    summary: 'one turn: print the answer, or the events as JSON lines',
    usage: `workmem run "<prompt>" [--json] [--continue | --session <id> | --no-session]
echo "<prompt>" | workmem run [...]

Runs one turn and prints the answer as it streams: stdout carries only the answer; tool
calls, memory writes and the status line go to stderr. Without a prompt argument the
prompt is read from stdin. Exits 1 if the turn fails. Each run starts a new session
unless -c or --session continues one (the status line names the session).

  --json              print every event as one JSON line instead
  -c, --continue      continue the newest session of this directory
  --session <id>      continue a given session
  --no-session        a throwaway turn: nothing is kept (a temporary home, removed at the end)`,
    options: { ...SESSION_OPTIONS, json: { type: 'boolean' }, 'no-session': { type: 'boolean' } },
    load: () => import('./run.js'),
  },
  rpc: {
    summary: 'JSON commands on stdin, responses and events on stdout',
    usage: `workmem rpc [--continue | --session <id>]

One JSON object per line on stdin, framed on \\n only; responses and events on stdout,
one per line. Commands: prompt, abort, get_state, get_messages, get_memory, compact,
set_mode, new_session, switch_session, list_sessions. See ${RPC_DOC}.

${INSPECT_HELP}`,
    options: { ...SESSION_OPTIONS },
    load: () => import('./rpc.js'),
  },
  sessions: {
    summary: 'list, show or remove sessions',
    usage: `workmem sessions list [--all] | show <id> | rm <id> | prune --older-than <age> [--all] [--dry-run]

  list                        the sessions of this directory, newest first (--all: all)
  show <id>                   a session's details, memory and latest messages (also
                              while it runs elsewhere)
  rm <id>                     delete a session and its files
  prune --older-than <age>    delete the sessions of this directory (--all: of all) not
                              updated for that long: 90m, 12h, 30d, 2w; one in use is kept
  --dry-run                   with prune: list what it would delete, delete nothing
  --home <dir>                where sessions live (env WORKMEM_HOME; default ~/.workmem)
${DATABASE_HELP}`,
    options: {
      all: { type: 'boolean' },
      'older-than': { type: 'string' },
      'dry-run': { type: 'boolean' },
      home: { type: 'string' },
      ...DATABASE_OPTIONS,
    },
    load: () => import('./sessions.js'),
  },
  memory: {
    summary: "show a session's working memory",
    usage: `workmem memory show [<id>]

Prints overview.md and the detail/ index of a session (default: the newest of this directory),
also while the session runs elsewhere.

  --home <dir>                where sessions live (env WORKMEM_HOME; default ~/.workmem)
${DATABASE_HELP}`,
    options: { home: { type: 'string' }, ...DATABASE_OPTIONS },
    load: () => import('./sessions.js').then((m) => ({ main: m.memoryMain })),
  },
  demo: {
    summary: 'a 32-turn conversation with a scripted model, no API key needed',
    usage: `workmem demo [--turns <n>] [--home <dir>] [--quiet]

Starts the local OpenAI-compatible test server with protocolFollower — a deterministic,
scripted stand-in for a language model — and runs a conversation through the same code
path as chat: facts stated early and asked late, a reminder, memory written, the switch
to phase 2, a compaction. Ends with a table of what happened. Its session is in a
temporary home removed at the end (--home <dir> keeps it, for a replay in workmem viz),
never in your sessions.`,
    options: { turns: { type: 'string' }, home: { type: 'string' }, quiet: { type: 'boolean' } },
    load: () => import('./demo.js'),
  },
  eval: {
    summary: 'does memory work with my model? a benchmark and CI gate',
    usage: EVAL_USAGE,
    options: EVAL_OPTIONS,
    load: () => import('./eval.js'),
  },
  serve: {
    summary: 'a working-memory proxy: any OpenAI-compatible agent, unchanged, behind it',
    usage: SERVE_USAGE,
    options: SERVE_OPTIONS,
    load: () => import('./serve.js'),
  },
  viz: {
    summary: 'the visualizer: statecharts, replay, live sessions, in the browser',
    usage: `workmem viz [<id> | --session <id>] [--port <n>] [--home <dir>] [--database-url-file <path>]

Serves the visualizer on 127.0.0.1 (default port 4900): the statecharts drawn from the
machines, replay of recorded sessions step by step, the requests' token use, the working
memory as it was, and sessions running with --inspect, live (with a database, the sessions
kept there, their traces read from it). Ctrl-C stops it.

Open the URL it prints: it carries a per-run token (#token=…) that every API and live
route requires; the page reads it from the fragment. Only this host's own page gets in
(foreign Origin and Host headers are refused). The token is also kept in
<home>/viz/<port>.json (readable by you only), where your --inspect sessions find it and
check that the listener is the server you started before they send anything.

  --port <n>                  the port (default 4900)
  --session <id>              open this session
  --home <dir>                where sessions live (env WORKMEM_HOME; default ~/.workmem)
${DATABASE_HELP}`,
    options: { port: { type: 'string' }, session: { type: 'string' }, home: { type: 'string' }, ...DATABASE_OPTIONS },
    load: () => import('./viz.js'),
  },
};

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return `workmem — working memory for LLM agents

Usage: workmem <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`)
  .join('\n')}

Run 'workmem <command> --help' for a command's options.

${MODEL_HELP}`;
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${mainHelp()}\n`);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write('workmem 0.1.0\n');
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr.write(
      `workmem: unknown command ${JSON.stringify(name)}; the commands are ${Object.keys(COMMANDS).join(', ')} (see workmem --help)\n`,
    );
    return 2;
  }
  let parsed: { values: Flags; positionals: string[] };
  const withModel = ['chat', 'run', 'rpc'].includes(name) ? MODEL_OPTIONS : {};
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...ALWAYS, ...withModel, ...command.options },
      allowPositionals: true,
      strict: true,
    }) as never;
  } catch (error) {
    io.stderr.write(
      `workmem ${name}: ${usageError(error, Object.keys({ ...ALWAYS, ...withModel, ...command.options }))} (see workmem ${name} --help)\n`,
    );
    return 2;
  }
  if (parsed.values.session === '') {
    // An empty id would otherwise mean "no id": a new session, silently.
    io.stderr.write(`workmem ${name}: --session needs a session id, got an empty string\n`);
    return 2;
  }
  if (typeof parsed.values['database-url'] === 'string') io.stderr.write(DATABASE_URL_WARNING);
  if (parsed.values.help) {
    io.stdout.write(`${command.usage}${['chat', 'run', 'rpc'].includes(name) ? `\n\n${MODEL_HELP}` : ''}\n`);
    return 0;
  }
  try {
    const module = await command.load();
    return await module.main({ flags: parsed.values, positionals: parsed.positionals }, io);
  } catch (error) {
    io.stderr.write(`workmem ${name}: ${describeError(error)}\n`);
    if (parsed.values.debug && error instanceof Error && error.stack) io.stderr.write(`${error.stack}\n`);
    return isUsageError(error) ? 2 : 1;
  }
}

function usageError(error: unknown, known: string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (unknown) {
    const near = nearest(unknown[1]!.replace(/^-+/, ''), known);
    return `unknown option ${unknown[1]}${near ? `; did you mean --${near}?` : ''}`;
  }
  const missing = /Option '([^']+)' argument missing/.exec(message);
  if (missing) return `option ${missing[1]!.split(',').pop()!.trim().split(' ')[0]} needs a value`;
  return message.split('.')[0]!;
}

/** The known option closest to a mistyped one: a typo or two away (Levenshtein), else none. */
function nearest(typed: string, known: string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(typed, name);
    if (distance <= Math.max(1, Math.min(3, Math.floor(name.length / 4))) && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    previous = row;
  }
  return previous[b.length]!;
}

export function describeError(error: unknown): string {
  return terminalLine((error instanceof Error ? error.message : String(error)).split('\n')[0]!);
}

function isUsageError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'ConfigError' || error.name === 'UsageError');
}
