/**
 * The prompt of the optional LLM-as-judge (`--judge-model`): a question of the eval, what
 * was expected, and the answer given; the judge says CORRECT or WRONG on its first line.
 * Kept here, in the repository, so that a judged score can be reproduced and reviewed.
 */

/** The judge's system message. */
export const JUDGE_SYSTEM = `You grade answers of an AI assistant in a long conversation with a user.
You get the user's question, the expected answer, and the assistant's answer.
Reply with exactly one word on the first line: CORRECT or WRONG. You may add one short line of reason after it.

The answer is CORRECT when it gives the expected answer, in any wording or language, as its answer.
It is WRONG when it gives another value, an outdated value as the current one, someone else's value,
several candidates without choosing, or says it does not know.
When the expected answer is that the user never said it, the answer is CORRECT only when it says it
does not know or was not told, and WRONG when it makes a value up.`;

/** The judge's user message for one question. */
export function judgeMessage(question: string, expected: string, answer: string): string {
  return `Question: ${question}\n\nExpected answer: ${expected}\n\nAssistant's answer: ${answer}`;
}

/** The expected answer as the judge reads it. */
export function expectedForJudge(expected: readonly string[], forbidden: readonly string[], notSaid: boolean): string {
  if (notSaid) return 'The user never said this; the assistant should say it does not know.';
  const also = expected.length > 1 ? ` (also accepted: ${expected.slice(1).join('; ')})` : '';
  const not = forbidden.length ? ` Not: ${forbidden.join('; ')} (outdated, or someone else's).` : '';
  return `${expected[0]}${also}.${not}`;
}
