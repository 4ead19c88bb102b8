/**
 * Counting by lines gives the whole text's count: the cuts fall where no token of either
 * encoding spans, whatever surrounds them (texts drawn from the characters that decide where
 * pieces end: line breaks, whitespace, '/', punctuation, letters, digits, an apostrophe), and a
 * line remembered from an earlier text counts the same in the next.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countByLines } from '../../src/tokens/lineCounts.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { renderTail } from '../../src/prompt/requestTail.js';

const PARTS = [
  '\n',
  '\n\n',
  '\r\n',
  ' ',
  '  ',
  '\t',
  '/',
  '<',
  '>',
  '.',
  '?',
  '-',
  "'s",
  'a',
  'Word',
  'ABC',
  '1',
  '2024',
  '%',
  '⚠️',
  '中文',
  '{"a":1}',
];
const text = fc.array(fc.constantFrom(...PARTS), { maxLength: 40 }).map((parts) => parts.join(''));

describe('countByLines', () => {
  for (const model of ['gpt-4o', 'gpt-4']) {
    it(`counts as the whole text does (${model})`, async () => {
      const counter = await loadTokenCounter(model);
      fc.assert(
        fc.property(text, (t) => countByLines(counter, t) === counter.text(t)),
        { numRuns: 3000 },
      );
    });
  }

  it("counts a request's tail as the whole text, reminder and all, each time", async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const meta = {
      tokens_used: 91234,
      tokens_max: 128000,
      tokens_percent: 71,
      messages_in_history: 412,
      messages_sent: 40,
      working_memory_size: 2345,
    };
    for (const level of ['gentle', 'firm', 'urgent'] as const)
      for (const language of ['en', 'zh'] as const) {
        const tail = renderTail(meta, { level, reason: 'rounds', rounds: 12, tokensPercent: 71 }, language, '2026-11-25');
        expect(countByLines(counter, tail)).toBe(counter.text(tail));
        expect(countByLines(counter, tail)).toBe(counter.text(tail));
      }
  });
});
