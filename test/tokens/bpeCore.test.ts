/**
 * The counter counts as gpt-tokenizer does, and never has the split pattern cloned: a
 * clone is compiled afresh once V8's compilation cache has aged out (a few major
 * collections), 3–7 ms for o200k's pattern. (That figure is V8's, measured with
 * `node --expose-gc`; a unit test asserts no speed.)
 */
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { countTokens as gpt4oCount } from 'gpt-tokenizer/model/gpt-4o';
import { countTokens as gpt4Count } from 'gpt-tokenizer/model/gpt-4';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InPlaceSplit, loadBpeCounter } from '../../src/tokens/bpeCore.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
const TEXTS = [
  '',
  'Question 12: what changed since the last request?',
  'special tokens as text: <|endoftext|> <|im_start|>user<|im_end|> <|fim_prefix|>',
  '中文句子，没有标点的长句子测试一下分词是否一致。日本語も少し。',
  'x'.repeat(400),
  '  \n\n  indented\t\ttabs\r\n  and trailing   ',
  'emoji 🧠🧠 and 😀 and a lone surrogate \ud800 here',
  JSON.stringify({ path: 'working-memory/overview.md', lines: [1, 22, 333], note: 'y'.repeat(80) }),
  "don't won't it's I'll 12345678 3.14159 -- ... !!! ???",
];

afterEach(() => vi.restoreAllMocks());

describe('bpe counter', () => {
  it('counts every text as gpt-tokenizer counts it, in both encodings', async () => {
    const o200k = await loadBpeCounter('o200k_base');
    const cl100k = await loadBpeCounter('cl100k_base');
    for (const text of TEXTS) {
      expect(o200k.count(text), text).toBe(gpt4oCount(text, PLAIN));
      expect(cl100k.count(text), text).toBe(gpt4Count(text, PLAIN));
    }
  });

  it('never asks a RegExp to clone itself for matchAll', async () => {
    const { count } = await loadBpeCounter('o200k_base');
    const cloning = vi.spyOn(RegExp.prototype, Symbol.matchAll);
    for (const text of TEXTS) count(text);
    expect(cloning).not.toHaveBeenCalled();
    // The spy sees the library's own path: gpt-tokenizer's countTokens goes through it.
    gpt4oCount('a check that the spy sees a clone', PLAIN);
    expect(cloning).toHaveBeenCalled();
  });

  it('InPlaceSplit matches as String#matchAll does, empty matches and code points included', () => {
    const patterns = [O200K_TOKEN_SPLIT_REGEX, /a*/gu, /(?:)/gu, /x?/g, /\p{L}+|\s+/gu];
    const texts = ['', 'abc', 'a😀b', 'b a\na', '😀😀', '\ud83d', ...TEXTS];
    for (const pattern of patterns) {
      const split = new InPlaceSplit(pattern);
      for (const text of texts) {
        const expected = [...text.matchAll(new RegExp(pattern.source, pattern.flags))].map((m) => [m[0], m.index]);
        expect(
          [...text.matchAll(split)].map((m) => [m[0], m.index]),
          `${pattern} on ${JSON.stringify(text)}`,
        ).toEqual(expected);
        // Used again from the start, as each count does.
        expect([...text.matchAll(split)].length).toBe(expected.length);
      }
    }
    expect(() => new InPlaceSplit(/a/u)).toThrow(/must be global/);
  });
});
