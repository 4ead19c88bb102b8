/**
 * How a session looks in the terminal (chat, run, demo): the answer streamed as it
 * arrives, tool calls, markers for reminders, memory writes, mode switches and
 * compactions, and a status line after each turn.
 */
import type { WorkmemEvent } from '../events.js';
import type { Session } from '../session/index.js';
import { followCompactions } from './compactionFigures.js';
import { terminalLine, terminalStream } from './terminalText.js';

export interface Output {
  write(text: string): void;
  color: boolean;
}

const CODES = { dim: 2, red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36 } as const;
export type Color = keyof typeof CODES;

export function paint(out: Output, color: Color, text: string): string {
  return out.color ? `\u001b[${CODES[color]}m${text}\u001b[0m` : text;
}

export function terminalOutput(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): Output {
  return { write: (t) => stream.write(t), color: Boolean(stream.isTTY) && !env.NO_COLOR };
}

/**
 * Renders one session's events; returns a function that stops rendering. With `answer`,
 * the model's text goes there bare (for `workmem run`: stdout carries only the answer)
 * and everything else to `out`. Text from the model, tools and files passes through
 * terminalText: no escape sequence of theirs reaches the terminal. While `hushed()` says
 * so (the chat said it is stopping the turn), no more of the answer is drawn.
 */
export function renderEvents(session: Session, out: Output, answer?: Output, hushed: () => boolean = () => false): () => void {
  let streaming = false;
  const text = answer ?? out;
  let filter = terminalStream();
  const line = (color: Color, message: string): void => {
    if (streaming && !answer) {
      out.write('\n');
      streaming = false;
    }
    out.write(`${paint(out, color, message)}\n`);
  };
  // Compactions with the figures of their record (what left the history, what took its place).
  const stopCompactions = followCompactions(session, (e, before, after) =>
    line(
      'magenta',
      `⤓ compacted (${e.reason}): ${e.replaced} items, history ${before} → ${after} tokens → ${terminalLine(e.files.join(', '))}`,
    ),
  );
  const stopEvents = session.on('*', (e: WorkmemEvent) => {
    switch (e.type) {
      case 'message_delta':
        if (hushed()) break;
        if (!streaming && !answer) out.write(paint(out, 'blue', '● '));
        streaming = true;
        text.write(filter.write(e.delta));
        break;
      case 'message_end':
        // Hushed, the notice has ended the line already.
        if (streaming && !hushed()) text.write(`${filter.end()}\n`);
        filter = terminalStream();
        streaming = false;
        if (e.stop === 'aborted') line('yellow', '(stopped)');
        break;
      case 'tool_start':
        line('dim', `  → ${terminalLine(e.name)}(${clip(e.arguments, 100)})`);
        break;
      case 'tool_end':
        line(e.isError ? 'red' : 'dim', `  ← ${terminalLine(e.name)}: ${clip(e.content.split('\n')[0] ?? '', 100)}`);
        break;
      case 'reminder':
        line(
          'yellow',
          `⟡ reminder (${e.level}): ${e.reason === 'compaction' ? 'the history was compacted' : `${e.rounds} requests since the last memory update`}, context at ${e.tokensPercent} %`,
        );
        break;
      case 'memory_updated':
        line('green', `✎ memory updated: ${terminalLine(e.path)} (${e.bytes} bytes)${e.warning ? ` — ${terminalLine(e.warning)}` : ''}`);
        break;
      case 'mode_changed':
        line('cyan', `⇄ history mode: ${e.from} → ${e.to}${e.pinned ? ' (pinned)' : ''}`);
        break;
      case 'retry':
        line('yellow', `↻ ${terminalLine(e.error.message)}; retrying in ${(e.delayMs / 1000).toFixed(1)} s (attempt ${e.attempt})`);
        break;
      case 'error':
        line(e.fatal ? 'red' : 'yellow', `${e.fatal ? '✗' : '!'} ${terminalLine(e.error.message)}`);
        break;
    }
  });
  return () => {
    stopCompactions();
    stopEvents();
  };
}

/** model · tokens used / window (%) · history mode · rounds since the last memory update · input served by the prompt cache */
export function statusLine(session: Session): string {
  const state = session.state;
  const tokens = state.lastPrompt;
  const used = tokens
    ? `${tokens.total.toLocaleString('en-US')} / ${tokens.window.toLocaleString('en-US')} tokens (${tokens.percent} %)`
    : `0 / ${session.model.contextWindow.toLocaleString('en-US')} tokens`;
  // The server's own counts, when it reports them: how much of the input its prompt cache served.
  const cached = state.usage?.input ? ` · ${Math.round((100 * state.usage.cached) / state.usage.input)} % of input cached` : '';
  return `[${terminalLine(session.model.name)} · ${used} · ${state.mode}${state.pinned ? ' (pinned)' : ''} · ${state.tracker.rounds} since memory update${cached}]`;
}

function clip(text: string, n: number): string {
  const one = terminalLine(text.length > n * 4 ? text.slice(0, n * 4) : text).replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}
