/**
 * workmem chat: an interactive session. The answer streams as it arrives; a status line
 * follows each turn; slash commands inspect and steer the session. On a terminal the
 * prompt is the line editor of terminalInput.ts (keys in HELP); from a pipe, one message
 * a line. ChatController is also what `workmem demo` drives.
 */
import { createInterface } from 'node:readline';
import type { CliIO, Flags } from './cliIO.js';
import type { CompactionTarget } from '../compaction/plan.js';
import type { LLM } from '../llm/llm.js';
import type { Session } from '../session/index.js';
import { redactor } from '../secrets/redact.js';
import { listedSessions, shownTime } from './sessionList.js';
import type { CliConfig } from './config.js';
import { commandConfig, type CommandConfig } from './throwawayHome.js';
import { ContextWatch, renderContext } from './contextView.js';
import { paint, renderEvents, statusLine, terminalOutput, type Output } from './render.js';
import { inspectOption, openModel, startSession, storeOption } from './runtime.js';
import { terminalLine, terminalText } from './terminalText.js';
import { TerminalInput } from './terminalInput.js';
import { STOPPING_NOTICE } from './lineEditor.js';

const HELP = `Slash commands:
  /memory                          show working-memory/overview.md
  /context                         what the last request held: tokens by part, the window, compactions
  /detail [<file>]                 list detail/ files, or show one
  /compact [conversation|tools|all]  compact the history now
  /mode [auto|phase1|phase2|hybrid]  show or set the history mode
  /sessions                        sessions of this directory
  /new                             start a new session
  /resume <id>                     switch to another session
  /help  /exit
Keys: Enter sends. A pasted block is one message, newlines and all. For several lines,
end a line with \\ and press Enter, or press Ctrl-J (or Alt-Enter) for a new line.
Ctrl-C clears the line; on an empty line, a second Ctrl-C exits (so does Ctrl-D).
Esc or Ctrl-C stops a running turn (what it wrote is kept); Ctrl-C twice exits.`;

export class ChatController {
  private stopRendering: () => void = () => {};
  private watch: ContextWatch;
  /** Set when the user stopped the running turn: settles once the stop has released what it held back. */
  private stopping: Promise<void> | null = null;
  /** A stopping notice was printed: nothing more of the answer is drawn after it. */
  private hushed = false;

  constructor(
    public session: Session,
    private readonly out: Output,
    private readonly context: { config: CliConfig; llm: LLM; io: CliIO; throwaway?: boolean },
  ) {
    this.stopRendering = this.render(session);
    this.watch = this.watchContext(session);
  }

  /** Handle one input line; resolves to 'exit' when the user is done. */
  async handle(line: string): Promise<'exit' | void> {
    const text = line.trim();
    if (!text) return;
    if (text.startsWith('/') && !text.includes('\n')) return this.command(text);
    const result = await this.session.prompt(text);
    await this.stopping; // its notice before the status line
    this.stopping = null;
    this.hushed = false;
    if (result.status === 'failed' && result.error) this.say('red', `the turn failed: ${terminalLine(result.error.message)}`);
    this.say('dim', statusLine(this.session));
  }

  /**
   * Stop the running turn (Esc, Ctrl-C, SIGINT). The stop releases the answer's last text,
   * held back until then so that a key split across deltas could be masked; the abort
   * goes out in a microtask (Session.abort), and a notice printed meanwhile waits for the
   * next, so that it follows that text and nothing of the answer follows it.
   */
  interrupt(): void {
    if (!this.session.state.running) return;
    this.session.abort();
    this.stopping ??= Promise.resolve();
  }

  /** A notice while a turn runs (it starts on a line of its own): after what a stop released, and the last thing of the answer. */
  notice(text: string): void {
    const show = (): void => {
      if (this.stopping) this.hushed = true;
      this.out.write(`${paint(this.out, 'yellow', text)}\n`);
    };
    if (this.stopping) void this.stopping.then(show);
    else show();
  }

  private render(session: Session): () => void {
    return renderEvents(session, this.out, undefined, () => this.hushed);
  }

  async close(): Promise<void> {
    this.stopRendering();
    this.watch.close();
    await this.session.close();
  }

  banner(): void {
    const s = this.session;
    this.say(
      'dim',
      `workmem chat · ${terminalLine(s.model.name)} · session ${s.id} (${s.history.length ? 'resumed' : 'new'}) · ${s.state.mode}`,
    );
    this.say('dim', `working memory: ${terminalLine(s.dir)}/working-memory/overview.md · /help for commands`);
    if (this.context.throwaway) this.say('dim', '--no-session: nothing is kept; the session is removed when the chat ends');
    for (const problem of s.damage) this.say('yellow', `! ${terminalLine(problem)}`);
  }

  private async command(text: string): Promise<'exit' | void> {
    const [name, ...args] = text.slice(1).split(/\s+/);
    const arg = args.join(' ');
    const memory = this.session.record.memory;
    switch (name) {
      case 'exit':
      case 'quit':
        return 'exit';
      case 'help':
        return this.print(HELP);
      case 'memory':
        return this.print((await memory.snapshot()).content.trimEnd());
      case 'context':
        return this.print(renderContext(await this.watch.breakdown()));
      case 'detail': {
        if (arg)
          return this.print(
            (await memory.read(arg.startsWith('working-memory/') || arg.startsWith('detail/') ? arg : `detail/${arg}`)).text,
          );
        const detail = (await memory.snapshot()).detail;
        return this.print(
          detail.length
            ? detail.map((d) => `${terminalLine(d.path)}${d.heading ? `  ${terminalLine(d.heading)}` : ''}`).join('\n')
            : 'detail/ is empty',
        );
      }
      case 'compact': {
        const target = (arg || 'all') as CompactionTarget;
        // A compaction is reported once, by its compaction_end event (rendered with its record's figures).
        const result = await this.session.compact({ target });
        if (!result.changed) this.say('magenta', 'nothing to compact');
        return;
      }
      case 'mode':
        if (!arg) return this.print(`history mode: ${this.session.state.mode}${this.session.state.pinned ? ' (pinned)' : ' (auto)'}`);
        this.session.setMode(arg as never);
        return this.say('cyan', arg === 'auto' ? 'history mode: automatic' : `history mode pinned to ${arg}`);
      case 'sessions': {
        const { config, io } = this.context;
        const sessions = await listedSessions({ home: config.home, cwd: io.cwd, ...storeOption(config) });
        const mask = redactor([config.apiKey, ...(config.database?.secrets ?? [])]);
        return this.print(
          sessions
            .map((s) => `${s.id === this.session.id ? '*' : ' '} ${s.id}  ${shownTime(s.updatedAt)}  ${terminalLine(mask(s.title))}`)
            .join('\n') || 'no sessions',
        );
      }
      case 'new':
      case 'resume': {
        if (name === 'resume' && !arg) return this.say('red', 'usage: /resume <id>');
        const next = await startSession(
          this.context.config,
          this.context.llm,
          { cwd: this.context.io.cwd, ...(name === 'resume' ? { sessionId: arg } : {}) },
          this.context.io.env,
        );
        await this.close();
        this.session = next;
        this.stopRendering = this.render(next);
        this.watch = this.watchContext(next);
        return this.banner();
      }
      default:
        return this.say('red', `unknown command /${name} (/help lists them)`);
    }
  }

  private watchContext(session: Session): ContextWatch {
    return new ContextWatch(session);
  }

  /** Text from files, the model or the user: made terminal-safe here. */
  private print(text: string): void {
    this.out.write(`${terminalText(text)}\n`);
  }

  private say(color: Parameters<typeof paint>[1], text: string): void {
    this.out.write(`${paint(this.out, color, terminalText(text))}\n`);
  }
}

export async function main({ flags }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const command = commandConfig(flags, io.env);
  try {
    return await chat(command, flags, io);
  } finally {
    await command.done(); // a database's connections once every session is closed; a --no-session home
  }
}

async function chat(command: CommandConfig, flags: Flags, io: CliIO): Promise<number> {
  const model = await openModel(command.config);
  try {
    return await chatWith(model.llm, command, flags, io);
  } finally {
    await model.close();
  }
}

async function chatWith(llm: LLM, { config, throwaway, onSignals }: CommandConfig, flags: Flags, io: CliIO): Promise<number> {
  const session = await startSession(
    config,
    llm,
    {
      cwd: io.cwd,
      ...(typeof flags.session === 'string' ? { sessionId: flags.session } : {}),
      ...(typeof flags.name === 'string' ? { name: flags.name } : {}),
      ...inspectOption(flags, io),
      continueLast: flags.continue === true,
    },
    io.env,
  );
  const out = terminalOutput(io.stdout, io.env);
  const chat = new ChatController(session, out, { config, llm, io, throwaway: throwaway !== null });

  // Each loop prints the banner once its signal handlers are in place: a signal after it ends the chat cleanly.
  try {
    if (io.stdin.isTTY && io.stdout.isTTY) await terminalLoop(chat, out, io, onSignals);
    else await lineLoop(chat, out, io, onSignals);
  } finally {
    await chat.close();
  }
  return 0;
}

/** Input from a terminal: the line editor, bracketed paste, Ctrl-C and Esc as the help says. */
async function terminalLoop(chat: ChatController, out: Output, io: CliIO, onSignals: CommandConfig['onSignals']): Promise<void> {
  const input = new TerminalInput(
    io.stdin,
    io.stdout,
    { first: paint(out, 'green', '› '), next: paint(out, 'green', '… '), width: 2 },
    { interrupt: () => chat.interrupt(), notice: (text) => chat.notice(text) },
  );
  // A signal from outside (kill -INT, a closed terminal) ends the chat as Ctrl-C twice would.
  const stop = (): void => {
    chat.session.abort();
    input.requestExit();
  };
  onSignals(stop);
  // A terminal that went away fails every write (EIO): the chat still closes its session (and removes a --no-session home).
  io.stdout.on('error', stop);
  chat.banner();
  input.start();
  try {
    for (;;) {
      const action = await input.read();
      if (action.type === 'exit') break;
      if ((await handleLine(chat, out, action.text)) === 'exit' || input.exitRequested) break;
    }
  } finally {
    input.stop();
  }
}

/**
 * Input from a pipe or a file: one message a line. SIGINT stops a running turn (a second
 * within 2 s, or one between turns, ends the chat); SIGTERM and SIGHUP end it, the turn
 * stopped and the session closed, so a --no-session home is removed.
 */
async function lineLoop(chat: ChatController, out: Output, io: CliIO, onSignals: CommandConfig['onSignals']): Promise<void> {
  const rl = createInterface({ input: io.stdin, output: io.stdout, terminal: false });
  rl.setPrompt(paint(out, 'green', '› '));
  let lastInterrupt = 0;
  let ended = false;
  onSignals((signal) => {
    const now = Date.now();
    if (signal === 'SIGINT' && chat.session.state.running && now - lastInterrupt > 2000) {
      chat.interrupt();
      chat.notice(`\n${STOPPING_NOTICE}`);
      lastInterrupt = now;
      return;
    }
    ended = true;
    chat.session.abort();
    rl.close();
  });
  chat.banner();
  try {
    rl.prompt();
    for await (const line of rl) {
      if ((await handleLine(chat, out, line)) === 'exit' || ended) break;
      rl.prompt();
    }
  } finally {
    rl.close();
  }
}

function handleLine(chat: ChatController, out: Output, text: string): Promise<'exit' | void> {
  return chat.handle(text).catch((error: Error) => void out.write(`${paint(out, 'red', terminalLine(error.message))}\n`));
}
