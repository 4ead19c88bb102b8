/**
 * gpt-tokenizer's byte-pair encoder, built from its public parts (the encoding's params,
 * its ranks, BytePairEncodingCore) with one change: the split pattern is matched in place.
 * gpt-tokenizer splits text with `String#matchAll`, which clones the pattern on every
 * call. V8 finds a clone's compiled code in its compilation cache, but that cache ages out
 * after a few major collections, and o200k's pattern then compiles afresh: 3–7 ms for a
 * count of a few words. A process that collects often (a host app, the AI SDK's own work
 * at 10k messages) paid that on most model calls. The counts are gpt-tokenizer's own.
 */
import type { BytePairEncodingCore as Core } from 'gpt-tokenizer/BytePairEncodingCore';
import type { CountText } from './boundedCount.js';

/** The encoding's counter (special tokens such as `<|endoftext|>` counted as plain text: tool output may contain them) and its pre-tokenizer pattern (for boundedCount.ts). */
export async function loadBpeCounter(encoding: 'o200k_base' | 'cl100k_base'): Promise<{ count: CountText; split: RegExp }> {
  const [{ BytePairEncodingCore }, params, ranks] = await Promise.all([
    import('gpt-tokenizer/BytePairEncodingCore'),
    encoding === 'cl100k_base'
      ? import('gpt-tokenizer/encodingParams/cl100k_base').then((m) => m.Cl100KBase)
      : import('gpt-tokenizer/encodingParams/o200k_base').then((m) => m.O200KBase),
    encoding === 'cl100k_base' ? import('gpt-tokenizer/bpeRanks/cl100k_base') : import('gpt-tokenizer/bpeRanks/o200k_base'),
  ]);
  const given = params(ranks.default);
  const core: Core = new BytePairEncodingCore({ ...given, tokenSplitRegex: new InPlaceSplit(given.tokenSplitRegex) });
  // No special token is allowed: each is counted as the text it is.
  return { count: (text) => core.countNative(text, undefined), split: given.tokenSplitRegex };
}

/** A global pattern whose `matchAll` runs on one compiled copy of it, never a clone. */
export class InPlaceSplit extends RegExp {
  readonly #pattern: RegExp;

  constructor(pattern: RegExp) {
    if (!pattern.global) throw new TypeError('InPlaceSplit: the split pattern must be global');
    super(pattern.source, pattern.flags);
    this.#pattern = new RegExp(pattern.source, pattern.flags);
  }

  override [Symbol.matchAll](text: string): RegExpStringIterator<RegExpExecArray> {
    const pattern = this.#pattern;
    pattern.lastIndex = 0;
    return matches(pattern, text);
  }
}

/** As String#matchAll iterates: an empty match moves on by one character (a code point with the u flag). */
function* matches(pattern: RegExp, text: string): RegExpStringIterator<RegExpExecArray> {
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match[0] === '') pattern.lastIndex = nextIndex(text, pattern.lastIndex, pattern.unicode);
    yield match;
  }
  return undefined;
}

function nextIndex(text: string, index: number, unicode: boolean): number {
  if (!unicode || index + 1 >= text.length) return index + 1;
  const high = text.charCodeAt(index);
  const low = text.charCodeAt(index + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? index + 2 : index + 1;
}
