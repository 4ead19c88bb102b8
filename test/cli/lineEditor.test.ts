/**
 * The chat prompt's line editor without a terminal: keys in (as node:readline's keypress
 * parser names them), state and effects out.
 */
import { PassThrough } from 'node:stream';
import { emitKeypressEvents } from 'node:readline';
import { describe, expect, it } from 'vitest';
import {
  CLEARED_NOTICE,
  EXIT_NOTICE,
  STOPPING_NOTICE,
  editorText,
  initialEditor,
  pressKey,
  type EditorEffect,
  type EditorState,
  type Key,
} from '../../src/cli/lineEditor.js';
import { textWidth } from '../../src/cli/terminalInput.js';

/** Bytes as a terminal sends them, parsed into keys by node:readline's own parser. */
async function keysOf(bytes: string): Promise<Key[]> {
  const stream = new PassThrough() as unknown as NodeJS.ReadStream;
  emitKeypressEvents(stream, { escapeCodeTimeout: 10 } as never);
  const keys: Key[] = [];
  stream.on('keypress', (_: unknown, key: Key) => keys.push(key));
  stream.write(bytes);
  await new Promise((r) => setTimeout(r, 30)); // a lone ESC is reported after the timeout
  return keys;
}

function run(keys: Key[], busy = false, state = initialEditor()): { state: EditorState; effects: EditorEffect[] } {
  const effects: EditorEffect[] = [];
  for (const key of keys) {
    const step = pressKey(state, key, busy);
    state = step.state;
    effects.push(...step.effects);
  }
  return { state, effects };
}

const typed = (text: string): Key[] => [...text].map((ch) => ({ name: ch.toLowerCase(), sequence: ch }));
const ctrl = (name: string): Key => ({ name, ctrl: true, sequence: String.fromCharCode(name.charCodeAt(0) - 96) });
const ENTER: Key = { name: 'return', sequence: '\r' };

describe('line editor', () => {
  it('a bracketed paste is one message: its newlines (CR, LF or CRLF) do not send', async () => {
    const keys = await keysOf('\u001b[200~one\r\ntwo\rthree\nfour\r\nfive\u001b[201~');
    const pasted = run(keys);
    expect(pasted.effects).toEqual([]);
    expect(editorText(pasted.state)).toBe('one\ntwo\nthree\nfour\nfive');
    expect(pasted.state.mode).toBe('editing');
    const sent = run([ENTER], false, pasted.state);
    expect(sent.effects).toEqual([{ type: 'submit', text: 'one\ntwo\nthree\nfour\nfive' }]);
    expect(editorText(sent.state)).toBe('');
  });

  it('without bracketed paste, Return sends each line', async () => {
    const { effects } = run(await keysOf('one\rtwo\r'));
    expect(effects).toEqual([
      { type: 'submit', text: 'one' },
      { type: 'submit', text: 'two' },
    ]);
  });

  it('a trailing backslash continues the line; Ctrl-J and Alt-Enter insert a newline', async () => {
    const { state, effects } = run(await keysOf('a\\\rb\nc\u001b\rd'));
    expect(effects).toEqual([]);
    expect(state.lines).toEqual(['a', 'b', 'c', 'd']);
    expect(run([ENTER], false, state).effects).toEqual([{ type: 'submit', text: 'a\nb\nc\nd' }]);
    // A backslash before the cursor's end is text: Return sends.
    expect(run([...typed('x\\y'), ENTER]).effects).toEqual([{ type: 'submit', text: 'x\\y' }]);
  });

  it('Ctrl-C at the prompt clears the line, says how to exit, and a second Ctrl-C exits', async () => {
    const [cc] = await keysOf('\u0003');
    expect(cc).toMatchObject({ name: 'c', ctrl: true });
    const cleared = run([...typed('half a thought'), cc!]);
    expect(editorText(cleared.state)).toBe('');
    expect(cleared.effects).toEqual([{ type: 'notice', text: CLEARED_NOTICE }]);
    expect(run([cc!], false, cleared.state).effects).toEqual([{ type: 'exit' }]);
    // On an empty line: the first warns, the second exits; a key in between disarms.
    expect(run([cc!]).effects).toEqual([{ type: 'notice', text: EXIT_NOTICE }]);
    expect(run([cc!, cc!]).effects.at(-1)).toEqual({ type: 'exit' });
    expect(run([cc!, ...typed('a'), ctrl('u'), cc!]).effects).toEqual([
      { type: 'notice', text: EXIT_NOTICE },
      { type: 'notice', text: EXIT_NOTICE },
    ]);
  });

  it('while a turn runs, Esc and Ctrl-C interrupt it, and a second Ctrl-C exits', async () => {
    const [esc] = await keysOf('\u001b');
    expect(esc).toMatchObject({ name: 'escape' });
    expect(run([esc!], true).effects).toEqual([{ type: 'interrupt' }]);
    expect(run([esc!, esc!], true).effects).toEqual([{ type: 'interrupt' }, { type: 'interrupt' }]);
    expect(run([esc!], false).effects).toEqual([]); // idle: nothing to stop
    expect(run([ctrl('c')], true).effects).toEqual([{ type: 'interrupt' }, { type: 'notice', text: STOPPING_NOTICE }]);
    expect(run([ctrl('c'), ctrl('c')], true).effects.at(-1)).toEqual({ type: 'exit' });
    // What is typed during a turn is kept for the next prompt.
    expect(editorText(run(typed('next'), true).state)).toBe('next');
  });

  it('edits: cursor keys across lines, backspace joins lines, Ctrl-U, Ctrl-W, and Up recalls what was sent', async () => {
    let { state } = run(await keysOf('ab\ncd'));
    ({ state } = run(await keysOf('\u001b[D\u001b[D\u007f'), false, state)); // left left backspace: joins the lines
    expect(state.lines).toEqual(['abcd']);
    expect(state.col).toBe(2);
    ({ state } = run(await keysOf('X\u001b[H>'), false, state)); // type, Home, type
    expect(editorText(state)).toBe('>abXcd');
    ({ state } = run([...typed(' two words'), ctrl('w')], false, { ...state, col: state.lines[0]!.length }));
    expect(editorText(state)).toBe('>abXcd two ');
    const sent = run([ctrl('u'), ...typed('first'), ENTER, ...typed('draft')], false, state);
    expect(sent.effects).toEqual([{ type: 'submit', text: 'first' }]);
    const up = run(await keysOf('\u001b[A'), false, sent.state);
    expect(editorText(up.state)).toBe('first');
    expect(editorText(run(await keysOf('\u001b[B'), false, up.state).state)).toBe('');
    // Wide characters and surrogate pairs move and delete whole.
    const emoji = run([...typed('a😀'), { name: 'backspace' }]);
    expect(editorText(emoji.state)).toBe('a');
    expect(textWidth('a😀中')).toBe(5);
  });

  it('control characters and stray escape sequences type nothing; Ctrl-D exits only on an empty line', async () => {
    const { state } = run(await keysOf('a\u001b[1;5Pb\u0007'));
    expect(editorText(state)).toBe('ab');
    expect(run([ctrl('d')], false, state).effects).toEqual([]);
    expect(run([ctrl('d')]).effects).toEqual([{ type: 'exit' }]);
  });

  it('a long paste is one edit and one redraw, however long', async () => {
    const text = Array.from({ length: 5_000 }, (_, i) => `line ${i} of a long paste`).join('\r\n');
    const keys = await keysOf(`\u001b[200~${text}\u001b[201~`);
    let state = initialEditor();
    let redraws = 0;
    let effects = 0;
    for (const key of keys) {
      const step = pressKey(state, key, false);
      state = step.state;
      if (step.redraw) redraws++;
      effects += step.effects.length;
    }
    expect(redraws).toBe(1);
    expect(effects).toBe(0);
    expect(state.lines).toHaveLength(5_000);
    expect(state.lines[4_999]).toBe('line 4999 of a long paste');
    expect([state.row, state.col]).toEqual([4_999, 'line 4999 of a long paste'.length]);
    // Pasted in the middle of a line: the line's rest follows the paste.
    const middle = run([...typed('ab'), { name: 'left' }, ...(await keysOf('\u001b[200~1\n2\u001b[201~'))]);
    expect(middle.state.lines).toEqual(['a1', '2b']);
  });

  it('round 3 #7: Ctrl-C, Esc, Return and a second start marker inside a bracketed paste are text, never keys', async () => {
    const keys = await keysOf('\u001b[200~first\u0003/new\rsecond\u001b\rthird\u001b[200~ fourth\u0004\u001b[201~');
    for (const busy of [false, true]) {
      const pasted = run(keys, busy, initialEditor());
      expect(pasted.effects, `busy ${busy}`).toEqual([]);
      expect(editorText(pasted.state)).toBe('first/new\nsecond\nthird fourth');
    }
    // A paste whose end never comes is left by the terminal (a Ctrl-C after a quiet second): a paste-end, then the key.
    const stuck = run([...typed('kept?'), ...(await keysOf('\u001b[200~half'))]);
    expect(stuck.state.mode).toBe('pasting');
    expect(run([ctrl('c')], false, stuck.state).state.mode).toBe('pasting');
    const after = run([{ name: 'paste-end' }, ctrl('c')], false, stuck.state);
    expect(after.state.mode).toBe('editing');
    expect(editorText(after.state)).toBe('');
    expect(after.effects).toEqual([{ type: 'notice', text: CLEARED_NOTICE }]);
  });

  it('round 3 #8: C1 controls, pasted or typed, are dropped, and a C1 sequence whole', async () => {
    const pasted = run(await keysOf('\u001b[200~a\u0085b\u009b31mc\u009d0;title\u009cd\u0090q\u009ce\u001b[31mf\u001b[201~'));
    expect(editorText(pasted.state)).toBe('abcdef');
    const typedC1 = run(await keysOf('x\u0085y\u009fz'));
    expect(editorText(typedC1.state)).toBe('xyz');
  });
});
