/**
 * workmem run "<prompt>": one turn. The answer streams to stdout (or, with --json, every
 * event as a JSON line); the exit code says whether the turn succeeded.
 */
import type { CliIO, Flags } from '../cli.js';
import { loadConfig } from './config.js';
import { renderEvents, statusLine, terminalOutput } from './render.js';
import { makeLLM, startSession } from './runtime.js';
import { UsageError } from './usageError.js';

export async function main({ flags, positionals }: { flags: Flags; positionals: string[] }, io: CliIO): Promise<number> {
  const text = positionals.join(' ').trim();
  if (!text) throw new UsageError('give the prompt, e.g. workmem run "What changed?"');
  const config = loadConfig(flags, io.env);
  const llm = makeLLM(config);
  const session = await startSession(
    config,
    llm,
    { cwd: io.cwd, ...(typeof flags.session === 'string' ? { sessionId: flags.session } : {}), continueLast: flags.continue === true },
    io.env,
  );
  try {
    if (flags.json) {
      session.on('*', (event) => io.stdout.write(`${JSON.stringify(event)}\n`));
    } else {
      renderEvents(session, terminalOutput(io.stdout, io.env));
    }
    const result = await session.prompt(text);
    if (!flags.json) io.stderr.write(`${statusLine(session)} session ${session.id}\n`);
    if (result.status !== 'done') {
      if (!flags.json) io.stderr.write(`workmem run: the turn ${result.status}${result.error ? `: ${result.error.message}` : ''}\n`);
      return 1;
    }
    return 0;
  } finally {
    await session.close();
  }
}
