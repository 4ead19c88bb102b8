/**
 * Scoring an answer by normalised match: text folded (NFKC, lower case, punctuation and
 * symbols as spaces) and compared both with its spaces and without them, so "+351 912"
 * matches "+351912" and Chinese matches whatever the spacing. An answer is right when it
 * contains an expected value and no forbidden one (an old value, a distractor's) before it;
 * a "not said" question is right when the answer says it was not said.
 */
import type { Question } from './suite.js';

/** Text folded for matching: NFKC, lower case, runs of anything but letters and digits as one space. */
export function normalise(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * Where `needle` first occurs in `text`, both normalised (-1: nowhere): as whole words, or,
 * for a needle of several words or in Chinese, also with the spaces taken out of both.
 */
function firstIndex(text: string, needle: string): number {
  const spaced = normalise(needle);
  if (!spaced) return -1;
  const folded = normalise(text);
  const at = ` ${folded} `.indexOf(` ${spaced} `);
  if (at >= 0 || !/ |\p{Script=Han}/u.test(spaced)) return at;
  const bare = folded.replace(/ /g, '').indexOf(spaced.replace(/ /g, ''));
  // A position in the spaced text, to compare with the others: the share of the way in.
  return bare < 0 ? -1 : Math.round((bare / Math.max(1, folded.replace(/ /g, '').length)) * folded.length);
}

/** How an answer says that something was never said, in English and Chinese. */
const NOT_SAID = [
  /\b(?:do not|don't|dont|did not|didn't|have not|haven't|has not|hasn't|never|not)\s+(?:\w+\s+){0,3}(?:know|knew|mention|mentioned|say|said|told|tell|share|shared|provide|provided|give|given|specify|specified|state|stated|recall|see|find|have)\b/i,
  /\b(?:no|not any)\s+(?:record|information|mention|details?|note)\b/i,
  /\b(?:not sure|unknown|not available|isn't something you|wasn't mentioned|not in (?:my|our) (?:notes|memory))\b/i,
  /不知道|没有?提到|没有?说过?|未提及|未提到|不清楚|没有?告诉|没有?记录|无法确定|没有相关信息|不确定/,
];

/** The answer says it was not said (or that it does not know). */
export function saysNotSaid(answer: string): boolean {
  return NOT_SAID.some((pattern) => pattern.test(answer));
}

/** Whether `answer` is right for `question` by normalised match. */
export function matches(question: Question, answer: string): boolean {
  if (question.notSaid) return saysNotSaid(answer);
  const expected = question.expected.map((e) => firstIndex(answer, e)).filter((i) => i >= 0);
  if (!expected.length) return false;
  const forbidden = (question.forbidden ?? []).map((f) => firstIndex(answer, f)).filter((i) => i >= 0);
  // Both named ("Lagos station now, no longer Faro airport"): right when the expected one comes first.
  return !forbidden.length || Math.min(...expected) < Math.min(...forbidden);
}
