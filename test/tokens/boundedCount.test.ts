/**
 * Token counting never hands BPE a piece longer than MAX_PIECE_CHARS (a long run of one
 * character class froze the process: BPE is quadratic in a piece's length), and counts
 * ordinary text exactly as gpt-tokenizer does on the whole text. The speed figures are in
 * the reliability run (test/reliability/llm.ts), not here.
 */
import { BytePairEncodingCore } from 'gpt-tokenizer/BytePairEncodingCore';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { countTokens } from 'gpt-tokenizer/model/gpt-4o';
import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { boundedCounter, MAX_PIECE_CHARS } from '../../src/tokens/boundedCount.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { defineTool } from '../../src/tools/tool.js';
import { newSession } from '../helpers.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
const direct = (text: string): number => countTokens(text, PLAIN);

/** Every piece BPE is asked to merge, as long as the spy is on. */
let longest = 0;
// BPE itself (private in the library's types): every merge goes through it, cached or not.
const core = BytePairEncodingCore.prototype as unknown as { bytePairEncode(input: string): number[] };
const original = core.bytePairEncode;
beforeEach(() => {
  longest = 0;
  core.bytePairEncode = function (this: unknown, input: string) {
    longest = Math.max(longest, input.length);
    return original.call(this, input);
  };
});
afterEach(() => {
  core.bytePairEncode = original;
});

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const json = JSON.stringify(
  Array.from({ length: 400 }, (_, i) => ({ id: i, name: `item-${i}`, tags: ['α', 'b c', 'd\n'], nested: { ok: i % 2 === 0, n: i * 1.5 } })),
);
const samples: Record<string, string> = {
  prose: 'The quick brown fox jumps over the lazy dog. It wasn’t going to stop — not today, not ever!\n\n'.repeat(800),
  'JSON, minified (no spaces, 40 KB)': json,
  'JSON, pretty-printed': JSON.stringify(JSON.parse(json), null, 2),
  Chinese: '工作记忆是一个让大模型自己维护状态的文件，每次请求都会注入。它会提醒模型及时更新，并在需要时压缩历史。\n'.repeat(600),
  code: 'export function add(a: number, b: number): number {\n  return a + b; // sum\n}\n\nconst xs = [1, 2, 3].map((x) => x * 2);\n'.repeat(
    500,
  ),
  'special tokens as text': 'before <|endoftext|> after <|im_start|>user\n'.repeat(300),
  'mixed scripts and emoji': 'Ünïcödé 🎉🎉 naïve café — ελληνικά русский 日本語のテキスト 😀\t\ttabs\r\nCRLF lines\r\n'.repeat(400),
  'blank lines and indentation': `${'    indented line\n\n\n'.repeat(300)}${' '.repeat(100)}x\n`,
  'a URL and a base64 blob': `see https://example.com/a/b/c?d=e&f=g#h and ${Buffer.from('x'.repeat(30_000)).toString('base64')} end`,
};

describe('bounded token counting', () => {
  it('counts ordinary text exactly as the encoder does on the whole text', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    for (const [name, text] of Object.entries(samples)) {
      expect(text.length, name).toBeGreaterThan(MAX_PIECE_CHARS);
      expect(counter.text(text), name).toBe(direct(text));
    }
  });

  it('chunks at the encoder’s own piece boundaries: random texts count exactly, for any chunk size', () => {
    const random = seeded(7);
    const alphabet = ['a', 'B', 'é', '中', '1', '23', '!', '/', ' ', '  ', '\n', '\r\n', '\t', "'s", '😀', '—', '<|endoftext|>'];
    const counted = boundedCounter(direct, O200K_TOKEN_SPLIT_REGEX, 16, 20);
    let tried = 0;
    for (let i = 0; i < 600; i++) {
      let text = '';
      const parts = 20 + Math.floor(random() * 120);
      for (let j = 0; j < parts; j++) text += alphabet[Math.floor(random() * alphabet.length)]!;
      // Only texts whose pieces are all short are ordinary: they must count exactly.
      const pieces = text.match(O200K_TOKEN_SPLIT_REGEX) ?? [];
      if (pieces.some((p) => p.length > 16)) continue;
      expect(counted(text), JSON.stringify(text)).toBe(direct(text));
      tried++;
    }
    expect(tried).toBeGreaterThan(300);
  });

  it('never hands BPE a piece longer than MAX_PIECE_CHARS, and stays close on pathological runs', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const runs: Record<string, string> = {
      letters: 'a'.repeat(6_000),
      'random letters': Array.from({ length: 6_000 }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join(''),
      Chinese: Array.from({ length: 3_000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20_000))).join(''),
      spaces: ' '.repeat(6_000),
      punctuation: '!'.repeat(6_000),
      'newlines after punctuation': `!${'\n/'.repeat(3_000)}`,
      'emoji (surrogate pairs)': '😀'.repeat(3_000),
    };
    for (const [name, text] of Object.entries(runs)) {
      longest = 0;
      const bounded = counter.text(text);
      expect(longest, name).toBeLessThanOrEqual(MAX_PIECE_CHARS);
      const exact = direct(text);
      // Cutting a run can only change merges at the cuts: a few percent at most.
      expect(Math.abs(bounded - exact) / exact, `${name}: ${bounded} vs ${exact}`).toBeLessThan(0.05);
    }
  });

  it('counts a 10 MB run of one character in slices (the encoder alone does not finish)', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    longest = 0;
    // 128 a's are 16 tokens: 78,125 slices.
    expect(counter.text('a'.repeat(10_000_000))).toBe(1_250_000);
    expect(counter.text(' '.repeat(10_000_000))).toBeGreaterThan(0);
    expect(longest).toBeLessThanOrEqual(MAX_PIECE_CHARS);
  });

  it('every count a session makes goes through the bound: messages, tool names and arguments, system prompt, memory', async () => {
    const run = 'a'.repeat(5_000);
    const tool = defineTool({
      name: 'echo',
      description: `Echo text. ${'z'.repeat(5_000)}`,
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => `echo: ${text.slice(0, 10)} ${'b'.repeat(5_000)}`,
    });
    const llm = scriptedModel([
      { toolCalls: [{ name: 'echo', arguments: { text: run } }] },
      { toolCalls: [{ name: `x${'n'.repeat(5_000)}`, arguments: {} }] },
      { toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content: `# Overview\n${'m'.repeat(4_000)}` } }] },
      { text: `done ${'c'.repeat(5_000)}` },
    ]);
    const session = await newSession({ llm, tools: [tool], instructions: `Be brief. ${'i'.repeat(5_000)}` });
    longest = 0;
    const result = await session.prompt(`count this ${'p'.repeat(5_000)}`);
    expect(result.status).toBe('done');
    expect(longest).toBeGreaterThan(0);
    expect(longest).toBeLessThanOrEqual(MAX_PIECE_CHARS);
    await session.close();
  });
});
