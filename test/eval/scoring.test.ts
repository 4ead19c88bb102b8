/** Scoring by normalised match: folding, whole words, the first of expected and forbidden, and "not said" in both languages. */
import { describe, expect, it } from 'vitest';
import { matches, normalise, saysNotSaid } from '../../src/eval/index.js';

describe('scoring', () => {
  it('folds case, width and punctuation', () => {
    expect(normalise('Your Flight is TP-1351!')).toBe('your flight is tp 1351');
    expect(normalise('ＡＢＣ，１２３。')).toBe('abc 123');
  });

  it('finds expected values as whole words, across spacing for several words and Chinese', () => {
    const q = { category: 'early-fact', expected: ['TP 1351'] };
    expect(matches(q, 'Your flight number is TP 1351.')).toBe(true);
    expect(matches(q, 'It is TP1351, I think.')).toBe(true);
    expect(matches({ category: 'early-fact', expected: ['16'] }, 'That was in 2016.')).toBe(false);
    expect(matches({ category: 'early-fact', expected: ['+351 912 004 881'] }, 'Call +351912004881.')).toBe(true);
    expect(matches({ category: 'early-fact', expected: ['米白色'] }, '你的瓷砖颜色是米白色。')).toBe(true);
    expect(matches({ category: 'early-fact', expected: ['米白色'] }, '你的瓷砖颜色是浅灰色。')).toBe(false);
  });

  it('counts an answer with a forbidden value wrong, unless the expected one comes first', () => {
    const q = { category: 'updated-fact', expected: ['Lagos station'], forbidden: ['Faro airport'] };
    expect(matches(q, 'Your pickup is Faro airport.')).toBe(false);
    expect(matches(q, 'Your pickup is Lagos station now (it was Faro airport).')).toBe(true);
    expect(matches(q, 'It was Faro airport; I am not sure about Lagos station.')).toBe(false);
  });

  it('knows "I do not know" in English and Chinese, and not a made-up value', () => {
    const q = { category: 'not-said', expected: [], notSaid: true };
    for (const answer of [
      "I don't know your passport number.",
      'You never told me that.',
      'You have not mentioned it.',
      '我不知道你的燃气表编号。',
      '你没有提到过。',
    ])
      expect(matches(q, answer), answer).toBe(true);
    for (const answer of ['Your passport number is X1234567.', '你的燃气表编号是123。']) expect(saysNotSaid(answer), answer).toBe(false);
  });
});
