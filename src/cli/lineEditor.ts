/**
 * The chat prompt's input, as a pure state machine: a key (as node:readline's keypress
 * parser names it) and whether a turn is running go in; the next state and what the
 * terminal should do come out. Two modes: editing, and pasting (between the bracketed
 * paste markers ESC[200~ and ESC[201~, where Return is a newline, not a send).
 *
 * What comes between the paste markers is text, whatever its bytes: never a key.
 *
 * Several lines: a line ending in "\" continues on Return, and Ctrl-J or Alt-Enter
 * insert a newline. Ctrl-C clears a non-empty line; on an empty line it warns, and a
 * second one exits. While a turn runs, Ctrl-C and Esc interrupt it (a second Ctrl-C exits).
 */

import { typedText } from './terminalText.js';

export interface Key {
  name?: string | undefined;
  sequence?: string | undefined;
  ctrl?: boolean | undefined;
  meta?: boolean | undefined;
  shift?: boolean | undefined;
}

export interface EditorState {
  mode: 'editing' | 'pasting';
  /** The text being written, one entry a line (never empty). */
  lines: string[];
  row: number;
  /** In UTF-16 units of lines[row]. */
  col: number;
  /** The last key was a Ctrl-C that warned: the next exits. */
  armed: boolean;
  /** Texts sent before, oldest first, for Up and Down. */
  past: string[];
  /** Which of `past` is shown (past.length: the text being written). */
  recall: number;
  /** The text of the paste under way, inserted whole when it ends (one edit, one redraw, however long). */
  pasted: string;
}

export type EditorEffect = { type: 'submit'; text: string } | { type: 'exit' } | { type: 'interrupt' } | { type: 'notice'; text: string };

export interface EditorStep {
  state: EditorState;
  effects: EditorEffect[];
  /** The text or the cursor changed: draw the prompt again. */
  redraw: boolean;
}

export const CLEARED_NOTICE = '(line cleared — Ctrl-C again on an empty line to exit)';
export const EXIT_NOTICE = '(Ctrl-C again to exit)';
export const STOPPING_NOTICE = '(stopping the turn — Ctrl-C again to exit)';

const PAST_LIMIT = 200;

export function initialEditor(past: string[] = []): EditorState {
  return { mode: 'editing', lines: [''], row: 0, col: 0, armed: false, past, recall: past.length, pasted: '' };
}

export function editorText(state: EditorState): string {
  return state.lines.join('\n');
}

export function pressKey(state: EditorState, key: Key, busy: boolean): EditorStep {
  if (state.mode === 'pasting') {
    if (key.name === 'paste-end') return edit(insertText({ ...state, mode: 'editing', pasted: '' }, typedText(state.pasted)));
    // A paste is text, never keys: Ctrl-C, Return or a marker inside it are characters pasted.
    // (A paste whose end never comes is left with a Ctrl-C typed once it went quiet: terminalInput.ts.)
    return step(key.name === 'paste-start' ? state : { ...state, pasted: state.pasted + pastedText(key) });
  }
  if (key.name === 'paste-start') return step({ ...state, mode: 'pasting', armed: false, pasted: '' });
  if (key.name === 'paste-end') return step(state);

  const armed = state.armed;
  const s: EditorState = { ...state, armed: false, mode: 'editing', pasted: '' };
  if (key.ctrl && key.name === 'c') {
    if (busy) return armed ? step(s, [{ type: 'exit' }]) : step({ ...s, armed: true }, [{ type: 'interrupt' }, notice(STOPPING_NOTICE)]);
    if (editorText(s) !== '') return step({ ...s, ...blank(), armed: true, recall: s.past.length }, [notice(CLEARED_NOTICE)], true);
    return armed ? step(s, [{ type: 'exit' }]) : step({ ...s, armed: true }, [notice(EXIT_NOTICE)]);
  }
  if (key.name === 'escape') return step(s, busy ? [{ type: 'interrupt' }] : []);
  if (key.ctrl && key.name === 'd') return editorText(s) === '' && !busy ? step(s, [{ type: 'exit' }]) : edit(deleteRight(s));

  const line = s.lines[s.row]!;
  if (key.name === 'return' && !key.meta && !key.ctrl) {
    if (line.endsWith('\\') && s.col === line.length)
      return edit(newline({ ...s, lines: replace(s.lines, s.row, line.slice(0, -1)), col: line.length - 1 }));
    return submit(s);
  }
  // Ctrl-J arrives as "\n" (named enter); Alt-Enter as ESC + "\r".
  if (key.name === 'enter' || (key.name === 'return' && key.meta)) return edit(newline(s));

  if (key.ctrl) {
    switch (key.name) {
      case 'a':
        return edit({ ...s, col: 0 });
      case 'e':
        return edit({ ...s, col: line.length });
      case 'u':
        return edit({ ...s, lines: replace(s.lines, s.row, line.slice(s.col)), col: 0 });
      case 'k':
        return edit({ ...s, lines: replace(s.lines, s.row, line.slice(0, s.col)) });
      case 'w': {
        const from = line.slice(0, s.col).replace(/\S*\s*$/u, '').length;
        return edit({ ...s, lines: replace(s.lines, s.row, line.slice(0, from) + line.slice(s.col)), col: from });
      }
      case 'h':
        return edit(deleteLeft(s));
      case 'b':
        return edit(moveLeft(s));
      case 'f':
        return edit(moveRight(s));
      default:
        return step(s);
    }
  }
  switch (key.name) {
    case 'backspace':
      return edit(deleteLeft(s));
    case 'delete':
      return edit(deleteRight(s));
    case 'left':
      return edit(moveLeft(s));
    case 'right':
      return edit(moveRight(s));
    case 'home':
      return edit({ ...s, col: 0 });
    case 'end':
      return edit({ ...s, col: line.length });
    case 'up':
      return edit(s.row > 0 ? { ...s, row: s.row - 1, col: Math.min(s.col, s.lines[s.row - 1]!.length) } : recallPast(s, -1));
    case 'down':
      return edit(
        s.row < s.lines.length - 1 ? { ...s, row: s.row + 1, col: Math.min(s.col, s.lines[s.row + 1]!.length) } : recallPast(s, 1),
      );
  }
  if (key.meta) return step(s);
  return edit(insert(s, printable(key)));
}

/**
 * What a key of a paste adds: Return and line feed a newline (CR LF and CR become LF when
 * inserted), a tab a tab; other characters as they came, filtered once the paste ends
 * (typedText: a C1 sequence such as U+009B 3 1 m is dropped whole, as in model output).
 */
function pastedText(key: Key): string {
  if (key.name === 'return') return '\r';
  if (key.name === 'enter') return '\n';
  if (key.name === 'tab') return '\t';
  return key.ctrl || key.meta || /\u001b/.test(key.sequence ?? '') ? '' : (key.sequence ?? '');
}

/** Text of several lines, inserted at the cursor. */
function insertText(s: EditorState, text: string): EditorState {
  const pieces = text.replace(/\r\n?/g, '\n').split('\n');
  const line = s.lines[s.row]!;
  const before = line.slice(0, s.col);
  const after = line.slice(s.col);
  if (pieces.length === 1) return { ...s, lines: replace(s.lines, s.row, before + pieces[0]! + after), col: s.col + pieces[0]!.length };
  const last = pieces.at(-1)!;
  const lines = [...s.lines.slice(0, s.row), before + pieces[0]!, ...pieces.slice(1, -1), last + after, ...s.lines.slice(s.row + 1)];
  return { ...s, lines, row: s.row + pieces.length - 1, col: last.length };
}

/** What a key types: its text, without control characters, C0, DEL or C1 (a stray escape sequence types nothing). */
function printable(key: Key): string {
  const text = key.sequence ?? '';
  return /[\u0000-\u001f\u007f-\u009f]/u.test(text) ? '' : text;
}

function submit(s: EditorState): EditorStep {
  const text = editorText(s);
  const past = text.trim() && s.past.at(-1) !== text ? [...s.past, text].slice(-PAST_LIMIT) : s.past;
  return step({ ...s, ...blank(), past, recall: past.length }, [{ type: 'submit', text }], true);
}

function recallPast(s: EditorState, by: -1 | 1): EditorState {
  const recall = s.recall + by;
  if (recall < 0 || recall > s.past.length) return s;
  const lines = (recall === s.past.length ? '' : s.past[recall]!).split('\n');
  const row = by < 0 ? 0 : lines.length - 1;
  return { ...s, lines, row, col: lines[row]!.length, recall };
}

function insert(s: EditorState, text: string): EditorState {
  if (!text) return s;
  const line = s.lines[s.row]!;
  return { ...s, lines: replace(s.lines, s.row, line.slice(0, s.col) + text + line.slice(s.col)), col: s.col + text.length };
}

function newline(s: EditorState): EditorState {
  const line = s.lines[s.row]!;
  const lines = [...s.lines.slice(0, s.row), line.slice(0, s.col), line.slice(s.col), ...s.lines.slice(s.row + 1)];
  return { ...s, lines, row: s.row + 1, col: 0 };
}

function deleteLeft(s: EditorState): EditorState {
  const line = s.lines[s.row]!;
  if (s.col > 0) {
    const from = s.col - charBefore(line, s.col);
    return { ...s, lines: replace(s.lines, s.row, line.slice(0, from) + line.slice(s.col)), col: from };
  }
  if (s.row === 0) return s;
  const above = s.lines[s.row - 1]!;
  const lines = [...s.lines.slice(0, s.row - 1), above + line, ...s.lines.slice(s.row + 1)];
  return { ...s, lines, row: s.row - 1, col: above.length };
}

function deleteRight(s: EditorState): EditorState {
  const line = s.lines[s.row]!;
  if (s.col < line.length) return { ...s, lines: replace(s.lines, s.row, line.slice(0, s.col) + line.slice(s.col + charAt(line, s.col))) };
  if (s.row === s.lines.length - 1) return s;
  const lines = [...s.lines.slice(0, s.row), line + s.lines[s.row + 1]!, ...s.lines.slice(s.row + 2)];
  return { ...s, lines };
}

function moveLeft(s: EditorState): EditorState {
  if (s.col > 0) return { ...s, col: s.col - charBefore(s.lines[s.row]!, s.col) };
  return s.row > 0 ? { ...s, row: s.row - 1, col: s.lines[s.row - 1]!.length } : s;
}

function moveRight(s: EditorState): EditorState {
  const line = s.lines[s.row]!;
  if (s.col < line.length) return { ...s, col: s.col + charAt(line, s.col) };
  return s.row < s.lines.length - 1 ? { ...s, row: s.row + 1, col: 0 } : s;
}

/** UTF-16 units of the character before / at `col` (2 for a surrogate pair). */
function charBefore(line: string, col: number): number {
  const code = line.charCodeAt(col - 1);
  return code >= 0xdc00 && code <= 0xdfff && col >= 2 ? 2 : 1;
}
function charAt(line: string, col: number): number {
  const code = line.charCodeAt(col);
  return code >= 0xd800 && code <= 0xdbff && col + 1 < line.length ? 2 : 1;
}

function replace(lines: string[], row: number, line: string): string[] {
  const next = lines.slice();
  next[row] = line;
  return next;
}

function blank(): Pick<EditorState, 'lines' | 'row' | 'col' | 'mode'> {
  return { lines: [''], row: 0, col: 0, mode: 'editing' };
}

function notice(text: string): EditorEffect {
  return { type: 'notice', text };
}

function step(state: EditorState, effects: EditorEffect[] = [], redraw = false): EditorStep {
  return { state, effects, redraw };
}

function edit(state: EditorState): EditorStep {
  return { state, effects: [], redraw: true };
}
