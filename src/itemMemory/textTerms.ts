/**
 * Terms for retrieval: Intl.Segmenter words (ICU's dictionary segmentation, so Chinese is
 * split into words, not by whitespace), lowercased, with a light plural strip for Latin
 * words and the commonest function words of English and Chinese left out; for Chinese and
 * Japanese also the characters and character bigrams, so recall does not hang on segmentation.
 */
const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });

const STOP = new Set(
  (
    'a an the is are was were be been am do does did of to in on at by for with from and or but not no it its this that these those ' +
    'i me my we our you your he she they them their his her what which who whom how when where why there here as if then than so ' +
    'can could will would should may might must have has had about into over under up down out just also very ' +
    '的 了 是 在 和 与 及 或 也 都 就 而 把 被 让 给 对 从 向 这 那 这个 那个 一个 我 你 他 她 它 我们 你们 他们 吗 呢 吧 啊 么 什么 怎么 哪 哪里 谁'
  ).split(' '),
);

/** Han and kana: scripts written without spaces, where ICU's dictionary decides the words. */
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+/gu;

export function terms(text: string): string[] {
  const lower = text.toLowerCase();
  const out: string[] = [];
  for (const s of segmenter.segment(lower)) {
    if (!s.isWordLike) continue;
    let word = s.segment.replace(/'s$/, '');
    if (/^[a-z]+$/.test(word) && word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) word = word.slice(0, -1);
    if (!STOP.has(word)) out.push(word);
  }
  for (const run of lower.match(CJK_RUN) ?? []) out.push(...characterGrams(run));
  return out;
}

/**
 * Single characters and character bigrams of a CJK run, besides ICU's words: the
 * dictionary may fuse "猫叫" in a fact while the question has "猫" alone, and the two
 * still share "猫". A stop character (的, 是, …) is neither a term nor half of a bigram.
 */
function characterGrams(run: string): string[] {
  const chars = [...run];
  const out: string[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (STOP.has(c)) continue;
    out.push(c);
    const next = chars[i + 1];
    if (next !== undefined && !STOP.has(next)) out.push(c + next);
  }
  return out;
}
