/**
 * Text that came from a model, a file or a user, made safe to print to a terminal: no
 * escape sequence reaches it (OSC 52 writes the clipboard, others clear the screen or set
 * the window title), and no other control character (a lone \r rewrites a line). Whole
 * sequences are dropped; a lone control character becomes U+FFFD, so something visibly
 * was there. `--json` output is JSON, escaped already, and does not come through here.
 */

/** OSC, DCS, SOS, PM, APC strings with their terminator (BEL, ESC \ or 8-bit ST). */
const STRING_SEQUENCE = /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u0080-\u009f]*(?:\u0007|\u001b\\|\u009c)/g;
/** CSI (ESC [ or 8-bit CSI): parameters, intermediates, a final byte. */
const CSI_SEQUENCE = /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]/g;
/** Any other escape sequence: ESC, intermediates, a final byte. */
const ESC_SEQUENCE = /\u001b[\u0020-\u002f]*[\u0030-\u007e]/g;
/** C0 (but \n and \t), DEL and C1. */
const BODY_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/** In a table cell or a one-line field, \n, \r and \t too. */
const LINE_BREAKS = /[\t\n\r\u2028\u2029]+/g;

const REPLACEMENT = '\ufffd';

function withoutSequences(text: string): string {
  return text.replace(STRING_SEQUENCE, '').replace(CSI_SEQUENCE, '').replace(ESC_SEQUENCE, '');
}

/** Body text (answers, files, messages): keeps \n and \t, a CRLF becomes \n. */
export function terminalText(text: string): string {
  // The common case (no control character at all) costs one test.
  if (!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(text)) return text;
  return withoutSequences(text.replace(/\r\n/g, '\n')).replace(BODY_CONTROL, REPLACEMENT);
}

/**
 * Text the user pasted or typed, as the prompt keeps it and sends it: \n and \t kept (a
 * CR LF or a lone CR becomes \n), escape sequences (7- and 8-bit) dropped whole, and any
 * other control character (C0, DEL, C1) dropped.
 */
export function typedText(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n');
  if (!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(lines)) return lines;
  return withoutSequences(lines).replace(BODY_CONTROL, '');
}

/** One line (a table cell, a name): line breaks and tabs become one space. */
export function terminalLine(text: string): string {
  return terminalText(text.replace(LINE_BREAKS, ' '));
}

/** The start of a sequence that the next piece of a stream may complete. */
const INCOMPLETE_TAIL =
  /(?:(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u0080-\u009f]*\u001b?|(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*|\u001b[\u0020-\u002f]*)$/;
/** Longer than any sequence worth completing: beyond this the tail is let through, filtered. */
const MAX_HELD = 4096;

/**
 * terminalText for text that arrives in pieces (streamed deltas): a sequence split across
 * two pieces is held back until it is whole, then dropped like any other.
 */
export function terminalStream(): { write(piece: string): string; end(): string } {
  let held = '';
  return {
    write(piece) {
      const text = held + piece;
      const window = text.length > MAX_HELD ? text.slice(-MAX_HELD) : text;
      const tail = INCOMPLETE_TAIL.exec(window);
      const cut = tail ? text.length - tail[0].length : text.length;
      held = text.slice(cut);
      return terminalText(text.slice(0, cut));
    },
    end() {
      const rest = held;
      held = '';
      return terminalText(rest);
    },
  };
}
