/**
 * The terminal-safe text filter: no escape sequence and no control character from a
 * model, a file or a user reaches the terminal, whole or split across streamed pieces.
 */
import { describe, expect, it } from 'vitest';
import { terminalLine, terminalStream, terminalText } from '../../src/cli/terminalText.js';

const HOSTILE = [
  '\u001b]52;c;aGVsbG8=\u0007', // OSC 52: write the clipboard
  '\u001b]0;title\u001b\\', // window title, ST-terminated
  '\u001b[2J\u001b[H', // clear the screen, home
  '\u009b31m', // 8-bit CSI
  '\u009d0;t\u009c', // 8-bit OSC with 8-bit ST
  '\u001bP1;2|data\u001b\\', // DCS
  '\u001bc', // reset
  '\u0007\u0008\u007f\u0085', // BEL, BS, DEL, NEL
];

describe('terminalText', () => {
  it('drops escape sequences, marks other controls, keeps \\n, \\t and plain text', () => {
    expect(terminalText(`a${HOSTILE.join('b')}c`)).toBe('abbbbbbb\ufffd\ufffd\ufffd\ufffdc');
    expect(terminalText('line one\r\n\tline two\rover')).toBe('line one\n\tline two\ufffdover');
    expect(terminalText('plain, ünïcode, 漢字')).toBe('plain, ünïcode, 漢字');
    expect(terminalText('unterminated \u001b]52;c;aGk=')).not.toMatch(/\u001b/);
  });

  it('terminalLine keeps a cell on one line', () => {
    expect(terminalLine('name\nabcd1234  fake row\r\tx')).toBe('name abcd1234  fake row x');
  });

  it('a sequence split across streamed pieces is dropped whole', () => {
    const text = `before ${HOSTILE.join(' ')} after`;
    for (const size of [1, 2, 3, 5, 7]) {
      const stream = terminalStream();
      let out = '';
      for (let i = 0; i < text.length; i += size) out += stream.write(text.slice(i, i + size));
      out += stream.end();
      expect(out, `pieces of ${size}`).toBe(terminalText(text));
      expect(out).not.toMatch(/[\u001b\u0080-\u009f]/);
    }
  });

  it('holds back at most a few kilobytes of an unterminated sequence', () => {
    const stream = terminalStream();
    const out = stream.write(`\u001b]52;c;${'A'.repeat(10_000)}`);
    expect(out.length).toBeGreaterThan(5_000);
    expect(out).not.toMatch(/\u001b/);
  });
});
