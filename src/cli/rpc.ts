/**
 * workmem rpc: JSON commands on stdin, JSON responses and events on stdout, one per line.
 * Lines are split on "\n" only (not readline, which also splits on U+2028/U+2029, legal
 * inside JSON strings). A bad line gets an error response and the process keeps serving;
 * so does a line longer than MAX_LINE_BYTES, which is skipped. Switching or starting a
 * session opens the new one before closing the current one, and is refused while a turn
 * runs. What is returned is masked like everything the session reports.
 * The protocol is documented in docs/rpc.md.
 */
import { z } from 'zod';
import type { CliIO, Flags } from './cliIO.js';
import type { LLM } from '../llm/llm.js';
import { redactor, type Redact } from '../secrets/redact.js';
import { findSession, listSessions, type Session } from '../session/index.js';
import { loadConfig, type CliConfig } from './config.js';
import { LineSplitter } from './lineSplitter.js';
import { inspectOption, openModel, startSession, storeOption, type SessionChoice } from './runtime.js';

/** A command longer than this is refused (and skipped up to its newline). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

const id = z.union([z.string(), z.number()]).optional();
export const RpcCommandSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('prompt'), id, text: z.string().min(1), pin: z.boolean().optional() }),
  z.object({ type: z.literal('abort'), id }),
  z.object({ type: z.literal('get_state'), id }),
  z.object({ type: z.literal('get_messages'), id, limit: z.number().int().positive().optional() }),
  z.object({ type: z.literal('get_memory'), id }),
  z.object({
    type: z.literal('compact'),
    id,
    target: z.enum(['conversation', 'tools', 'all']).optional(),
    strategy: z.enum(['archive', 'summarize']).optional(),
    keep_recent: z.number().int().min(0).optional(),
  }),
  z.object({ type: z.literal('set_mode'), id, mode: z.enum(['auto', 'phase1', 'phase2', 'hybrid']) }),
  z.object({ type: z.literal('new_session'), id, name: z.string().optional() }),
  z.object({ type: z.literal('switch_session'), id, sessionId: z.string().min(1) }),
  z.object({ type: z.literal('list_sessions'), id, all: z.boolean().optional() }),
]);
export type RpcCommand = z.infer<typeof RpcCommandSchema>;

export async function main({ flags }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const config = loadConfig(flags, io.env);
  const model = await openModel(config).catch(async (error: unknown) => {
    await config.store?.close();
    throw error;
  });
  try {
    const server = new RpcServer(config, model.llm, io);
    await server.open({
      ...(typeof flags.session === 'string' ? { sessionId: flags.session } : {}),
      ...inspectOption(flags, io),
      continueLast: flags.continue === true,
    });
    await server.serve();
    return 0;
  } finally {
    await model.close();
    await config.store?.close(); // a database's connections, once every session is closed
  }
}

class RpcServer {
  private session!: Session;
  private stopEvents: () => void = () => {};
  private chain: Promise<void> = Promise.resolve();
  private lineNumber = 0;
  /** The turn running now, from its turn_start: named when a session change is refused. */
  private running: { turn: number; promptId: string } | null = null;
  private inspect: { visualizer?: number; warn?: (message: string) => void } = {};
  private readonly mask: Redact;

  constructor(
    private readonly config: CliConfig,
    private readonly llm: LLM,
    private readonly io: CliIO,
  ) {
    this.mask = redactor([config.apiKey, io.env.OPENAI_API_KEY, ...(config.database?.secrets ?? [])]);
  }

  async open(choice: { sessionId?: string; continueLast?: boolean; visualizer?: number; warn?: (message: string) => void }): Promise<void> {
    if (choice.visualizer) this.inspect = { visualizer: choice.visualizer, ...(choice.warn ? { warn: choice.warn } : {}) };
    this.attach(await this.start(choice));
  }

  private start(choice: Omit<SessionChoice, 'cwd'>): Promise<Session> {
    return startSession(this.config, this.llm, { cwd: this.io.cwd, ...this.inspect, ...choice }, this.io.env);
  }

  private attach(session: Session): void {
    this.stopEvents();
    this.session = session;
    this.running = null;
    this.stopEvents = session.on('*', (event) => {
      if (event.type === 'turn_start') this.running = { turn: event.turn, promptId: event.promptId };
      if (event.type === 'turn_end') this.running = null;
      this.send(event);
    });
  }

  /**
   * new_session / switch_session: the new session is opened first; only then is the
   * current one closed. On any failure the client stays where it was, and is told so.
   */
  private async change(command: 'new_session' | 'switch_session', choice: { name?: string; sessionId?: string }) {
    const previous = this.session;
    const state = previous.state;
    if (state.running || state.queued) {
      const turn = this.running ? `turn ${this.running.turn} is running (prompt ${this.running.promptId})` : 'a turn is running';
      const queued = state.queued ? `, ${state.queued} more prompt(s) queued` : '';
      throw new Error(
        `${command} refused: ${turn}${queued}; abort it or wait for its turn_end, then try again (still in session ${previous.id})`,
      );
    }
    if (choice.sessionId !== undefined) {
      const dir = await findSession(choice.sessionId, { home: this.config.home, ...storeOption(this.config) }).catch((error: Error) => {
        throw new Error(`${error.message}; still in session ${previous.id}`);
      });
      if (dir === previous.dir) return { sessionId: previous.id, previousSessionId: previous.id, changed: false };
    }
    const next = await this.start(choice).catch((error: Error) => {
      throw new Error(`${error.message}; still in session ${previous.id}`);
    });
    this.attach(next);
    // The change has happened; a failure to close the old session is reported, not thrown.
    const warning = await previous.close().then(
      () => null,
      (error: Error) => `closing session ${previous.id} failed: ${error.message}`,
    );
    return { sessionId: next.id, previousSessionId: previous.id, changed: true, ...(warning ? { warning: this.mask(warning) } : {}) };
  }

  /** Read stdin to its end, handling one line at a time, in order. */
  serve(): Promise<void> {
    return new Promise((resolve) => {
      const lines = new LineSplitter(MAX_LINE_BYTES, {
        line: (line) => this.enqueue(line),
        tooLong: () => {
          const n = ++this.lineNumber;
          this.chain = this.chain.then(() =>
            this.respond('unknown', undefined, { error: `line ${n} is longer than ${MAX_LINE_BYTES / 1024 / 1024} MB; skipped` }),
          );
        },
      });
      this.io.stdin.on('data', (chunk: Buffer) => lines.push(chunk));
      this.io.stdin.on('end', () => {
        lines.end();
        // Finish what was asked before closing: the prompts already queued run to the end.
        this.chain = this.chain.then(async () => {
          await this.session.idle();
          this.stopEvents();
          await this.session.close();
        });
        void this.chain.then(resolve);
      });
    });
  }

  private enqueue(line: string): void {
    const n = ++this.lineNumber;
    if (!line.trim()) return;
    this.chain = this.chain.then(() => this.handle(line, n));
  }

  private async handle(line: string, n: number): Promise<void> {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (error) {
      return this.respond('unknown', undefined, { error: `line ${n} is not JSON: ${(error as Error).message}` });
    }
    const type = typeof (json as { type?: unknown })?.type === 'string' ? (json as { type: string }).type : 'unknown';
    const requestId = (json as { id?: unknown })?.id as string | number | undefined;
    const parsed = RpcCommandSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const known = RpcCommandSchema.options.map((o) => o.shape.type.value);
      const message = !known.includes(type as never)
        ? `unknown command ${JSON.stringify(type)}; known: ${known.join(', ')}`
        : `${issue.path.join('.') || 'command'}: ${issue.message}`;
      return this.respond(type, validId(requestId), { error: message });
    }
    const command = parsed.data;
    try {
      this.respond(command.type, command.id, { data: await this.run(command) });
    } catch (error) {
      this.respond(command.type, command.id, { error: this.mask((error as Error).message ?? String(error)) });
    }
  }

  private async run(command: RpcCommand): Promise<unknown> {
    const session = this.session;
    switch (command.type) {
      case 'prompt': {
        const { promptId } = session.enqueue(command.text, { pin: command.pin === true });
        return { promptId, sessionId: session.id };
      }
      case 'abort':
        session.abort();
        return { aborted: session.state.running };
      case 'get_state':
        return { ...session.state, model: session.model.name, contextWindow: session.model.contextWindow };
      case 'get_messages': {
        const view = session.history;
        const from = Math.max(0, view.length - (command.limit ?? 100));
        const messages = view.items.slice(from, view.length).map((i) => ({ seq: i.seq, turn: i.turn, tokens: i.tokens, ...i.message }));
        // The history in memory is as the model and the user wrote it; what leaves is masked.
        return { total: view.length, messages: JSON.parse(session.record.redact(JSON.stringify(messages))) as unknown };
      }
      case 'get_memory': {
        const memory = await session.record.memory.snapshot();
        return { overview: memory.content, bytes: memory.bytes, detail: memory.detail };
      }
      case 'compact': {
        const result = await session.compact({
          ...(command.target ? { target: command.target } : {}),
          ...(command.strategy ? { strategy: command.strategy } : {}),
          ...(command.keep_recent !== undefined ? { keepRecent: command.keep_recent } : {}),
        });
        return { compacted: result.changed, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter, files: result.files };
      }
      case 'set_mode':
        session.setMode(command.mode);
        return { mode: command.mode };
      case 'new_session':
        return this.change('new_session', command.name ? { name: command.name } : {});
      case 'switch_session':
        return this.change('switch_session', { sessionId: command.sessionId });
      case 'list_sessions':
        return {
          sessions: (
            await listSessions({ home: this.config.home, ...storeOption(this.config), ...(command.all ? {} : { cwd: this.io.cwd }) })
          ).map((s) => ({
            ...s,
            name: s.name === null ? null : this.mask(s.name),
          })),
        };
    }
  }

  private respond(command: string, id: string | number | undefined, body: { data: unknown } | { error: string }): void {
    this.send({ type: 'response', command, success: 'data' in body, ...body, ...(id !== undefined ? { id } : {}) });
  }

  private send(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value)}\n`);
  }
}

function validId(value: unknown): string | number | undefined {
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}
