/**
 * The chat prompt on a terminal: raw mode, bracketed paste switched on, keys parsed by
 * node:readline's keypress parser and fed to the line editor (lineEditor.ts), and the
 * text being written drawn again after each key, over as many rows as it takes.
 * While a turn runs nothing is drawn (the answer streams); keys still reach the editor,
 * so Ctrl-C and Esc interrupt, and what is typed shows at the next prompt.
 */
import { emitKeypressEvents } from 'node:readline';
import { initialEditor, pressKey, type EditorState, type Key } from './lineEditor.js';

const PASTE_ON = '\u001b[?2004h';
const PASTE_OFF = '\u001b[?2004l';
/** How long a lone ESC waits for the rest of a sequence before it counts as the Esc key. */
const ESCAPE_TIMEOUT_MS = 50;

export interface PromptLook {
  /** What the first line and the following lines start with, as written (colours allowed)... */
  first: string;
  next: string;
  /** ...and how many columns they take. */
  width: number;
}

export type InputAction = { type: 'submit'; text: string } | { type: 'exit' };

export class TerminalInput {
  private state: EditorState = initialEditor();
  private busy = true;
  private drawn = false;
  /** The cursor's row, counted from the prompt's first row. */
  private cursorRow = 0;
  private readonly actions: InputAction[] = [];
  private waiting: ((action: InputAction) => void) | null = null;
  private readonly onKey = (_: string | undefined, key: Key | undefined): void => this.key(key ?? {});
  /** The terminal went away: nothing more will be typed. */
  private readonly onEnd = (): void => this.requestExit();

  constructor(
    private readonly stdin: NodeJS.ReadStream,
    private readonly stdout: NodeJS.WriteStream,
    private readonly look: PromptLook,
    private readonly on: { interrupt(): void; notice(text: string): void },
  ) {}

  start(): void {
    emitKeypressEvents(this.stdin, { escapeCodeTimeout: ESCAPE_TIMEOUT_MS } as never);
    this.stdin.setRawMode(true);
    this.stdin.on('keypress', this.onKey);
    this.stdin.on('end', this.onEnd);
    this.stdin.resume();
    this.stdout.write(PASTE_ON);
  }

  stop(): void {
    this.stdin.off('keypress', this.onKey);
    this.stdin.off('end', this.onEnd);
    this.stdin.pause();
    if (this.stdout.writable) this.stdout.write(PASTE_OFF);
    try {
      this.stdin.setRawMode(false);
    } catch {
      // The terminal is gone (a hang-up): there is no mode to restore.
    }
  }

  /** Show the prompt (with whatever was typed meanwhile) and wait for a text to send, or for exit. */
  read(): Promise<InputAction> {
    this.busy = false;
    const queued = this.actions.shift();
    if (queued?.type === 'submit')
      this.stdout.write(`${this.look.first}${queued.text.split('\n').map(shown).join(`\r\n${this.look.next}`)}\r\n`);
    if (queued) return Promise.resolve(this.taken(queued));
    this.drawn = false;
    this.draw();
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** End the chat: now at the prompt, or once the running work is done. */
  requestExit(): void {
    this.act({ type: 'exit' });
  }

  /** Exit as soon as the running work is done (a second Ctrl-C during a turn). */
  get exitRequested(): boolean {
    return this.actions.some((a) => a.type === 'exit');
  }

  private taken(action: InputAction): InputAction {
    if (action.type === 'exit') this.actions.length = 0;
    this.busy = action.type === 'submit';
    return action;
  }

  private key(key: Key): void {
    const { state, effects, redraw } = pressKey(this.state, key, this.busy);
    this.state = state;
    for (const effect of effects) {
      if (effect.type === 'interrupt') this.on.interrupt();
      else if (effect.type === 'notice') this.notice(effect.text);
      else this.act(effect.type === 'submit' ? { type: 'submit', text: effect.text } : { type: 'exit' });
    }
    if (redraw && !this.busy) this.draw();
  }

  private act(action: InputAction): void {
    if (!this.busy) this.finishLine();
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = null;
      waiting(this.taken(action));
    } else {
      this.actions.push(action);
    }
  }

  private notice(text: string): void {
    if (this.busy) return this.on.notice(`\n${text}`); // the answer may be streaming: a line of its own
    this.finishLine();
    this.on.notice(text);
    this.drawn = false;
    this.draw();
  }

  /** Leave the prompt: the cursor goes below the text written, which stays on screen. */
  private finishLine(): void {
    if (!this.drawn) return;
    const rows = this.layout().endRow;
    this.stdout.write(`${down(rows - this.cursorRow)}\r\n`);
    this.drawn = false;
    this.cursorRow = 0;
  }

  private draw(): void {
    const { endRow, cursor } = this.layout();
    let out = this.drawn ? `${up(this.cursorRow)}\r\u001b[J` : '\r\u001b[J';
    const columns = this.columns();
    this.state.lines.forEach((line, i) => {
      out += `${i === 0 ? this.look.first : `\r\n${this.look.next}`}${shown(line)}`;
      // A row filled to the last column leaves the cursor there: move it onto the next row.
      const width = this.look.width + textWidth(line);
      if (width > 0 && width % columns === 0) out += ' \r\u001b[K';
    });
    out += `${up(endRow - cursor.row)}\r${cursor.col ? `\u001b[${cursor.col}C` : ''}`;
    this.stdout.write(out);
    this.drawn = true;
    this.cursorRow = cursor.row;
  }

  /** Where the text ends and where the cursor is, in screen rows from the prompt's first row. */
  private layout(): { endRow: number; cursor: { row: number; col: number } } {
    const columns = this.columns();
    let row = 0;
    let cursor = { row: 0, col: 0 };
    this.state.lines.forEach((line, i) => {
      if (i === this.state.row) {
        const x = this.look.width + textWidth(line.slice(0, this.state.col));
        cursor = { row: row + Math.floor(x / columns), col: x % columns };
      }
      row += Math.floor((this.look.width + textWidth(line)) / columns) + (i < this.state.lines.length - 1 ? 1 : 0);
    });
    return { endRow: row, cursor };
  }

  private columns(): number {
    return Math.max(10, this.stdout.columns || 80);
  }
}

function up(n: number): string {
  return n > 0 ? `\u001b[${n}A` : '';
}
function down(n: number): string {
  return n > 0 ? `\u001b[${n}B` : '';
}

const TAB = '    ';

/** A line as drawn: a tab as spaces, so that the columns counted are the columns shown. */
function shown(line: string): string {
  return line.replaceAll('\t', TAB);
}

/** Columns a text takes: wide (CJK, emoji) characters two, combining marks none. */
export function textWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '\t') width += TAB.length;
    if (code < 0x20 || (code >= 0x300 && code <= 0x36f) || code === 0x200d || (code >= 0xfe00 && code <= 0xfe0f)) continue;
    width += isWide(code) ? 2 : 1;
  }
  return width;
}

function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  );
}
