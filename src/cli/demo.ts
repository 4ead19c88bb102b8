/**
 * workmem demo: no API key needed. The local OpenAI-compatible test server plays the
 * model with protocolFollower — a deterministic, scripted stand-in, not a language
 * model — and a 32-turn conversation runs through the same code path as `workmem chat`
 * (the real openai client over HTTP): facts stated early and asked late, a reminder,
 * memory written, the switch to phase 2, a compaction. It ends with a table. Its session is
 * in a home of its own, never the user's: a temporary one removed at the end, or --home's, kept.
 */
import { UsageError } from './usageError.js';
import { z } from 'zod';
import type { CliIO, Flags } from './cliIO.js';
import type { WorkmemEvent } from '../events.js';
import { defineTool } from '../tools/tool.js';
import { protocolFollower, startTestServer, type RecordedRequest } from '../testing/index.js';
import { ChatController } from './chat.js';
import type { CliConfig } from './config.js';
import type { LLM } from '../llm/llm.js';
import { removeTemporaryHome, temporaryHome } from '../storage/temporaryHome.js';
import { paint, terminalOutput, type Output } from './render.js';
import { makeLLM, selfCommand, startSession } from './runtime.js';

/** A small window, so that a short conversation reaches the thresholds. */
const DEMO_WINDOW = 8_000;
const DEMO_SEED = 11;
const DEMO_FORGETFULNESS = 0.7;
/**
 * Sized so that the conversation crosses 40 % of the window at the start of turn 5, with
 * four turns behind it: the model compacts the oldest (keeping the last three) and,
 * reminded, writes its memory first. (The demo test checks that this still happens.)
 */
const DESIGN_LINES = 107;

const FACTS: [question: string, answer: string][] = [
  ['What is my name?', 'Ada'],
  ['What is my project?', 'a Rust compiler called Ferrite'],
  ['What is my favourite editor?', 'Helix'],
  ['What is the release deadline?', 'June 30'],
  ['What is my team size?', '4 people'],
];

export const DEMO_SCRIPT: string[] = [
  'Hi! My name is Ada. My project is a Rust compiler called Ferrite. Use the fetch tool with the design document.',
  'My favourite editor is Helix, and my team size is 4 people.',
  'Let us plan the work for this week.',
  'What should we build first?',
  'The release deadline is June 30.',
  'Use the fetch tool with the parser notes.',
  'Which parts of the design worry you most?',
  'Let us talk about parsing strategies for the new grammar.',
  'How should error recovery work in the parser?',
  'Use the fetch tool with the type checker notes.',
  'What about incremental type checking?',
  'Which intermediate representation fits best?',
  'How do we keep compile times low?',
  'Tell me about register allocation.',
  'What should the test strategy be?',
  'How do we report diagnostics well?',
  'Should the standard library be small?',
  'How do we handle generics?',
  'What about trait objects?',
  'How should we version the compiler?',
  'Which platforms do we target first?',
  'How do we document the language?',
  'Who reviews changes to the grammar?',
  'How do we benchmark the compiler?',
  'What could go wrong before the release?',
  'Summarise where we are.',
  'One more thing: how do we onboard new contributors?',
  ...FACTS.map(([question]) => question),
];

/** The shortest demo: the opening turns that state facts and fetch, then the questions. */
const MIN_TURNS = 10;
const MAX_TURNS = 2000;

/**
 * The script at `turns` turns: the default's, or its opening and its closing questions with
 * the discussion between shortened, or lengthened with more topics (the facts asked last).
 */
export function demoScript(turns = DEMO_SCRIPT.length): string[] {
  const head = DEMO_SCRIPT.slice(0, 5);
  const tail = DEMO_SCRIPT.slice(-(FACTS.length + 1));
  const middle = DEMO_SCRIPT.slice(5, -(FACTS.length + 1));
  const room = turns - head.length - tail.length;
  const more = Array.from(
    { length: Math.max(0, room - middle.length) },
    (_, i) => `Let us go over open question ${i + 1} of the compiler.`,
  );
  return [...head, ...middle.slice(0, Math.max(0, room)), ...more, ...tail];
}

const DOCUMENTS: Record<string, string> = {
  design: 'Ferrite design: a Rust compiler front end with an SSA-based IR, incremental type checking and a small runtime.',
  parser: 'Parser notes: recursive descent with Pratt parsing for expressions, error recovery at statement boundaries.',
  type: 'Type checker notes: bidirectional inference, trait resolution with caching, and monomorphisation of generics.',
};

export async function main({ flags }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  // A home of its own, not the user's: the demo's session is no session of theirs. Kept for the replay only with --home.
  const turns = flags.turns === undefined ? DEMO_SCRIPT.length : Number(flags.turns);
  if (!Number.isInteger(turns) || turns < MIN_TURNS || turns > MAX_TURNS)
    throw new UsageError(`--turns must be a whole number from ${MIN_TURNS} to ${MAX_TURNS}, got ${JSON.stringify(flags.turns)}`);
  if (typeof flags.home === 'string') {
    const result = await runDemo(io, { quiet: flags.quiet === true, home: flags.home, turns });
    return result.correct === result.asked ? 0 : 1;
  }
  // A temporary home, removed at the end (or, were the demo killed, by the next command that makes one).
  const home = temporaryHome('demo');
  try {
    const result = await runDemo(io, { quiet: flags.quiet === true, home, turns, kept: false });
    return result.correct === result.asked ? 0 : 1;
  } finally {
    removeTemporaryHome(home);
  }
}

export interface DemoResult {
  events: WorkmemEvent[];
  correct: number;
  asked: number;
  sessionId: string;
  sessionDir: string;
  /** What the test server received, for tests that compare it with the trace. */
  requests: RecordedRequest[];
}

export async function runDemo(
  io: CliIO,
  options: {
    quiet: boolean;
    home: string;
    /** Whether `home` outlives the demo (--home): the closing lines then say how to replay the session. Default true. */
    kept?: boolean;
    /** The conversation's length (default the script's, 32 turns). */
    turns?: number;
    seed?: number;
    /** Another client for the same server (the tests run the demo through aiSdkModel too); default the CLI's. */
    makeLLM?: (config: CliConfig) => LLM;
  },
): Promise<DemoResult> {
  const out = terminalOutput(io.stdout, io.env);
  const quiet = options.quiet;
  const server = await startTestServer({
    policy: protocolFollower({ seed: options.seed ?? DEMO_SEED, forgetfulness: DEMO_FORGETFULNESS }),
    chunkChars: 6,
  });
  const fetch = defineTool({
    name: 'fetch',
    description: 'Fetch one of the project documents by name',
    parameters: z.object({ input: z.string() }),
    execute: ({ input }) => {
      const key = Object.keys(DOCUMENTS).find((k) => input.toLowerCase().includes(k)) ?? 'design';
      const lines = key === 'design' ? DESIGN_LINES : 60;
      return `${DOCUMENTS[key]}\n\n${Array.from({ length: lines }, (_, i) => `${key} detail ${i + 1}: section ${i + 1} explains one part of ${key} in depth.`).join('\n')}`;
    },
  });
  try {
    // The same path as chat: configuration, the openai client over HTTP, the session, the controller.
    // The user's config.json is not read: the demo's flow must not depend on it.
    const config: CliConfig = {
      home: options.home,
      model: 'protocol-follower',
      baseURL: server.baseURL,
      contextWindow: DEMO_WINDOW,
      maxOutputTokens: 600,
    };
    const llm = (options.makeLLM ?? makeLLM)(config);
    const session = await startSession(config, llm, { cwd: io.cwd, name: 'workmem demo', tools: [fetch] }, {});
    const sink: Output = quiet ? { write: () => {}, color: false } : out;
    const chat = new ChatController(session, sink, { config, llm, io });
    const events: WorkmemEvent[] = [];
    session.on('*', (e) => events.push(e));
    const say = (text: string) => out.write(`${text}\n`);
    say(paint(out, 'cyan', 'workmem demo — the model is protocolFollower, a deterministic scripted stand-in (not a language model),'));
    say(
      paint(
        out,
        'cyan',
        `served by a local OpenAI-compatible test server at ${server.baseURL}; a ${DEMO_WINDOW.toLocaleString('en-US')}-token window keeps it short.`,
      ),
    );
    const kept = options.kept ?? true;
    say(
      paint(
        out,
        'cyan',
        kept
          ? `Its session is kept in ${options.home} (--home <dir> to choose another), not in your sessions.`
          : `Its session is in a temporary home, removed at the end; --home <dir> keeps it for a replay. Not in your sessions.`,
      ),
    );
    say('');
    const answers: string[] = [];
    const script = demoScript(options.turns);
    for (const line of script) {
      if (!quiet) out.write(`${paint(out, 'green', 'you ›')} ${line}\n`);
      const before = events.length;
      await chat.handle(line);
      const end = events.slice(before).find((e) => e.type === 'turn_end');
      answers.push(end?.type === 'turn_end' ? end.text : '');
    }
    const late = answers.slice(-FACTS.length);
    const correct = FACTS.filter(([, answer], i) => late[i]!.includes(answer)).length;
    say('');
    say(summary(events, script.length, correct, FACTS.length));
    say('');
    if (kept) {
      say(`Session:  ${session.dir}`);
      say(`          messages.jsonl, meta.json, working-memory/ (overview.md, detail/), trace.jsonl`);
      const home = ` --home ${shellWord(options.home)}`;
      say(`Replay:   ${selfCommand()} viz --session ${session.id}${home}   (then open the printed address)`);
      say(`Memory:   ${selfCommand()} memory show ${session.id.slice(0, 8)}${home}`);
    } else {
      say(`Replay:   ${selfCommand()} demo --home <dir>, then ${selfCommand()} viz --home <dir>   (the session, step by step)`);
    }
    await chat.close();
    return { events, correct, asked: FACTS.length, sessionId: session.id, sessionDir: session.dir, requests: server.requests };
  } finally {
    await server.close();
  }
}

function summary(events: WorkmemEvent[], turns: number, correct: number, asked: number): string {
  const built = events.filter((e): e is Extract<WorkmemEvent, { type: 'prompt_built' }> => e.type === 'prompt_built');
  // What each request would have cost carrying the whole history, never compacted.
  let logged = 0;
  let full = 0;
  for (const e of events) {
    if (e.type === 'message_end') logged += e.tokens;
    if (e.type === 'prompt_built') full += e.tokens.total - e.tokens.history + logged;
  }
  const sizes = built.map((b) => b.tokens.total).sort((a, b) => a - b);
  const sent = sizes.reduce((n, s) => n + s, 0);
  const count = (type: WorkmemEvent['type']) => events.filter((e) => e.type === type).length;
  const fmt = (n: number) => n.toLocaleString('en-US');
  const rows: [string, string][] = [
    ['turns', fmt(turns)],
    ['model requests', fmt(built.length)],
    ['reminders', fmt(count('reminder'))],
    ['memory writes', fmt(count('memory_updated'))],
    [
      'history mode switches',
      events
        .filter((e) => e.type === 'mode_changed')
        .map((e) => (e.type === 'mode_changed' ? `${e.from} → ${e.to}` : ''))
        .join(', ') || 'none',
    ],
    ['compactions', fmt(events.filter((e) => e.type === 'compaction_end' && e.replaced > 0).length)],
    [
      'prompt tokens per request',
      `min ${fmt(sizes[0] ?? 0)} · median ${fmt(sizes[Math.floor(sizes.length / 2)] ?? 0)} · max ${fmt(sizes.at(-1) ?? 0)}`,
    ],
    ['prompt tokens sent', fmt(sent)],
    ['with the full history', `${fmt(full)} (${full ? Math.round((100 * (full - sent)) / full) : 0} % saved)`],
    ['facts asked at the end', `${correct} / ${asked} answered from memory`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const valueWidth = Math.max(...rows.map(([, v]) => v.length));
  const bar = `+${'-'.repeat(width + 2)}+${'-'.repeat(valueWidth + 2)}+`;
  return [bar, ...rows.map(([k, v]) => `| ${k.padEnd(width)} | ${v.padEnd(valueWidth)} |`), bar].join('\n');
}

/** A path as one word for a shell command the user may paste: quoted when it needs to be. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
