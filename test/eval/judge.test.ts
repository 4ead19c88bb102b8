/**
 * The optional judge, offline with a scripted judge: its prompt is the repository's, it is
 * told the question, the expected answer and the answer, and its verdicts are counted (a
 * reply with none is left out).
 */
import { describe, expect, it } from 'vitest';
import { JUDGE_SYSTEM, runEval, type Suite } from '../../src/eval/index.js';
import { diligent, policyModel, type ChatRequest } from '../../src/testing/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';

const counter = await loadTokenCounter('gpt-4o');
const model = (): ReturnType<typeof policyModel> => policyModel(diligent(), { model: 'testing:diligent', counter });

const tiny: Suite = {
  name: 'tiny',
  conversations: [
    {
      id: 'tiny',
      title: 'a tiny conversation',
      language: 'en',
      turns: [
        { text: 'Hi! My flight number is TP 1351.' },
        { text: 'What is my flight number?', question: { category: 'early-fact', expected: ['TP 1351'] } },
        { text: 'What is my seat?', question: { category: 'not-said', expected: [], notSaid: true } },
        { text: 'Remind me, what is my flight number?', question: { category: 'early-fact', expected: ['TP 1351'] } },
      ],
    },
  ],
};

describe('the judge', () => {
  it("grades with the repository's prompt, and a reply without a verdict is left out", async () => {
    const asked: ChatRequest[] = [];
    const replies = ['CORRECT', 'WRONG: it made a value up', 'I am not sure'];
    const judge = policyModel(
      (request) => {
        asked.push(request);
        return { content: replies[asked.length - 1]! };
      },
      { model: 'judge' },
    );
    const result = await runEval({ llm: model, suite: tiny, arms: ['full-history'], judge });
    expect(asked.map((r) => r.messages[0]!.content)).toEqual([JUDGE_SYSTEM, JUDGE_SYSTEM, JUDGE_SYSTEM]);
    expect(asked[0]!.messages[1]!.content).toBe(
      "Question: What is my flight number?\n\nExpected answer: TP 1351.\n\nAssistant's answer: Your flight number is TP 1351.",
    );
    expect(asked[1]!.messages[1]!.content).toContain(
      'Expected answer: The user never said this; the assistant should say it does not know.',
    );
    expect(result.conversations[0]!.arms[0]!.questions.map((q) => q.judged)).toEqual([true, false, null]);
    expect(result.summary[0]!.judged).toEqual({ right: 1, asked: 2 });
    // Normalised match is kept beside the judge's verdicts.
    expect(result.summary[0]!.accuracy).toEqual({ right: 3, asked: 3 });
    expect(result.judge).toBe('judge');
  });
});
