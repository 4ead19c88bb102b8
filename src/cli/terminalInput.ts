/**
 * The chat prompt on a terminal: raw mode, bracketed paste switched on, keys parsed by
 * node:readline's keypress parser and fed to the line editor (lineEditor.ts), and the
 * text being written drawn again after each key, over as many rows as it takes — up to
 * the screen's height: a longer text is drawn as the rows around the cursor, with a line
 * saying how many rows are above and below, so a key after a 900 KB paste redraws a
 * screenful, not the paste. While a turn runs nothing is drawn (the answer streams); keys
 * still reach the editor, so Ctrl-C and Esc interrupt, and what is typed shows at the
 * next prompt.
 */
import { emitKeypressEvents } from 'node:readline';
import { initialEditor, pressKey, type EditorState, type Key } from './lineEditor.js';

const PASTE_ON = '\u001b[?2004h';
const PASTE_OFF = '\u001b[?2004l';
/** How long a lone ESC waits for the rest of a sequence before it counts as the Esc key. */
const ESCAPE_TIMEOUT_MS = 50;
/**
 * A paste arrives as fast as the terminal sends it; a Ctrl-C after this long a silence
 * is the user's, leaving a paste whose end marker never came (inside a paste it is text).
 */
const PASTE_QUIET_MS = 1000;

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
  /** The cursor's row, counted from the first row drawn. */
  private cursorRow = 0;
  /** How many rows the last drawing took. */
  private drawnRows = 0;
  /** The first text row drawn when the text is taller than the screen (kept between keys, so the view does not jump). */
  private top = 0;
  private lastKeyAt = 0;
  /** A paste ended in the keys being read now (see key). */
  private pasteJustEnded = false;
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
    const quiet = Date.now() - this.lastKeyAt >= PASTE_QUIET_MS;
    this.lastKeyAt = Date.now();
    if (this.state.mode === 'pasting' && quiet && key.ctrl && key.name === 'c') this.press({ name: 'paste-end' });
    // The rest of the burst a paste ended in is pasted text too: an end marker inside the
    // pasted text (ESC [201~) must not turn what follows it into keys, a Return that sends.
    if (this.pasteJustEnded && this.state.mode === 'editing' && key.name !== 'paste-start') this.press({ name: 'paste-start' });
    this.press(key);
    if (key.name === 'paste-end' && !this.pasteJustEnded) {
      this.pasteJustEnded = true;
      // The keys of one read are emitted at once: the burst is over at the next turn of the event loop.
      setImmediate(() => {
        this.pasteJustEnded = false;
        if (this.state.mode === 'pasting') this.press({ name: 'paste-end' });
      });
    }
  }

  private press(key: Key): void {
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
    this.stdout.write(`${down(this.drawnRows - 1 - this.cursorRow)}\r\n`);
    this.drawn = false;
    this.cursorRow = 0;
  }

  /**
   * Draw the text over the rows the last drawing took, each row written whole and ended
   * by us (never by the terminal's wrapping), at most a screenful: a taller text shows
   * the rows around the cursor, between two lines counting the rows left out.
   */
  private draw(): void {
    const columns = this.columns();
    const rows = this.state.lines.map((line, i) => wrap(line, this.look.width, columns, i === 0 ? this.look.first : this.look.next));
    const starts: number[] = [];
    let total = 0;
    for (const r of rows) {
      starts.push(total);
      total += r.length;
    }
    const at = rows[this.state.row]!;
    const within = rowAt(at, this.state.col);
    const cursor = {
      row: starts[this.state.row]! + within,
      col: at[within]!.indent + textWidth(this.state.lines[this.state.row]!.slice(at[within]!.from, this.state.col)),
    };

    // A taller text: the rows around the cursor, and a line each for the rows left out above and below.
    const room = Math.max(3, (this.stdout.rows || 24) - 1);
    const height = total <= room ? total : room - 2;
    this.top = Math.min(Math.max(this.top, cursor.row - height + 1, 0), cursor.row, total - height);
    const shown: string[] = this.top ? [`(… ${this.top.toLocaleString('en-US')} rows above)`] : [];
    const cursorRow = cursor.row - this.top + shown.length;
    for (let i = 0, row = 0; i < rows.length && row < this.top + height; row += rows[i]!.length, i++) {
      if (row + rows[i]!.length <= this.top) continue;
      rows[i]!.forEach((piece, k) => {
        if (row + k >= this.top && row + k < this.top + height) shown.push(pieceText(this.state.lines[i]!, piece));
      });
    }
    const below = total - this.top - height;
    if (below) shown.push(`(… ${below.toLocaleString('en-US')} rows below)`);
    let out = this.drawn ? `${up(this.cursorRow)}\r\u001b[J` : '\r\u001b[J';
    out += shown.join('\r\n');
    out += `${up(shown.length - 1 - cursorRow)}\r${cursor.col ? `\u001b[${cursor.col}C` : ''}`;
    this.stdout.write(out);
    this.drawn = true;
    this.cursorRow = cursorRow;
    this.drawnRows = shown.length;
  }

  private columns(): number {
    return Math.max(10, this.stdout.columns || 80);
  }
}

/** One screen row of a line: its prompt (on the first row only), where it starts and where it ends. */
interface Piece {
  prompt: string;
  indent: number;
  from: number;
  to: number;
}

/**
 * A line cut into screen rows of `columns`, after a prompt of `indent` columns: a wide
 * character that does not fit at the end of a row goes to the next, as terminals wrap it;
 * a line that fills its last row exactly gets an empty row after it, for the cursor.
 */
function wrap(line: string, indent: number, columns: number, prompt: string): Piece[] {
  const pieces: Piece[] = [];
  let piece: Piece = { prompt, indent, from: 0, to: 0 };
  let x = indent;
  let i = 0;
  for (const ch of line) {
    const w = textWidth(ch);
    if (x + w > columns && x > 0) {
      pieces.push({ ...piece, to: i });
      piece = { prompt: '', indent: 0, from: i, to: i };
      x = 0;
    }
    x += w;
    i += ch.length;
  }
  pieces.push({ ...piece, to: line.length });
  if (x >= columns) pieces.push({ prompt: '', indent: 0, from: line.length, to: line.length });
  return pieces;
}

/** The row of a wrapped line that holds position `col`. */
function rowAt(pieces: Piece[], col: number): number {
  let k = 0;
  while (k + 1 < pieces.length && pieces[k + 1]!.from <= col) k++;
  return k;
}

function pieceText(line: string, piece: Piece): string {
  return `${piece.prompt}${shown(line.slice(piece.from, piece.to))}`;
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
