/**
 * workmem run "<prompt>" (or the prompt on stdin): one turn. stdout carries only the
 * answer as it streams (or, with --json, every event as a JSON line); tool calls, memory
 * writes and the status line go to stderr. The exit code says whether the turn succeeded.
 */
import type { LLM } from '../llm/llm.js';
import type { CliIO, Flags } from './cliIO.js';
import { commandConfig, type CommandConfig } from './throwawayHome.js';
import { renderEvents, statusLine, terminalOutput } from './render.js';
import { terminalLine } from './terminalText.js';
import { UsageError } from './usageError.js';

export async function main({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const text = positionals.length || io.stdin.isTTY ? positionals.join(' ').trim() : (await readAll(io.stdin)).trim();
  if (!text)
    throw new UsageError(
      positionals.length || io.stdin.isTTY
        ? 'give the prompt, e.g. workmem run "What changed?"'
        : 'give the prompt, e.g. workmem run "What changed?" or echo "What changed?" | workmem run (stdin was empty)',
    );
  const command = commandConfig(flags, io.env);
  try {
    return await runTurn(text, command, flags, io);
  } finally {
    await command.done(); // a database's connections once the session is closed; a --no-session home
  }
}

async function runTurn(text: string, command: CommandConfig, flags: Flags, io: CliIO): Promise<number> {
  // Loaded once the configuration is known to be good: a usage or configuration error is told without loading a session's code.
  const { openModel } = await import('./runtime.js');
  const model = await openModel(command.config);
  try {
    return await turn(text, command, flags, io, model.llm);
  } finally {
    await model.close();
  }
}

async function turn(text: string, { config, throwaway, onSignals }: CommandConfig, flags: Flags, io: CliIO, llm: LLM): Promise<number> {
  const { startSession } = await import('./runtime.js');
  const session = await startSession(
    config,
    llm,
    {
      cwd: io.cwd,
      ...(typeof flags.session === 'string' ? { sessionId: flags.session } : {}),
      continueLast: flags.continue === true,
      warn: (message) => io.stderr.write(`workmem: ${message}\n`),
    },
    io.env,
  );
  // A throwaway session is removed at the end: Ctrl-C stops the turn rather than the process, so the end comes.
  if (throwaway) onSignals(() => session.abort());
  try {
    if (flags.json) {
      session.on('*', (event) => io.stdout.write(`${JSON.stringify(event)}\n`));
    } else {
      renderEvents(session, terminalOutput(io.stderr, io.env), terminalOutput(io.stdout, io.env));
    }
    const result = await session.prompt(text);
    if (!flags.json) io.stderr.write(`${statusLine(session)} ${throwaway ? 'no session kept' : `session ${session.id}`}\n`);
    if (result.status !== 'done') {
      if (!flags.json)
        io.stderr.write(`workmem run: the turn ${result.status}${result.error ? `: ${terminalLine(result.error.message)}` : ''}\n`);
      return 1;
    }
    return 0;
  } finally {
    await session.close();
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}
