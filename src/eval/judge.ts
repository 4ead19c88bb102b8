/**
 * The optional LLM-as-judge: a model the user names grades each answer with the prompt of
 * judgePrompt.ts. Its verdict is the first word of its reply; anything else is "no verdict",
 * reported as such and never counted as right or wrong.
 */
import type { LLM, LLMUsage } from '../llm/llm.js';
import { expectedForJudge, JUDGE_SYSTEM, judgeMessage } from './judgePrompt.js';
import type { Question } from './suite.js';

/** A judge's verdict on one answer, and what its request cost. */
export interface Verdict {
  /** null: the judge's reply did not start with CORRECT or WRONG, or its request failed. */
  correct: boolean | null;
  usage: LLMUsage | null;
}

/** Asks `judge` whether `answer` answers `question` (asked as `text`). */
export async function judgeAnswer(judge: LLM, text: string, question: Question, answer: string, signal: AbortSignal): Promise<Verdict> {
  try {
    const response = await judge.complete(
      {
        messages: [
          { role: 'system', content: JUDGE_SYSTEM },
          {
            role: 'user',
            content: judgeMessage(text, expectedForJudge(question.expected, question.forbidden ?? [], question.notSaid === true), answer),
          },
        ],
        tools: [],
        maxOutputTokens: 50,
      },
      { signal, onText: () => {} },
    );
    const word = /^\W*(correct|wrong)\b/i.exec(response.message.content ?? '')?.[1]?.toLowerCase();
    return { correct: word === undefined ? null : word === 'correct', usage: response.usage };
  } catch (error) {
    if (signal.aborted) throw error;
    return { correct: null, usage: null };
  }
}
