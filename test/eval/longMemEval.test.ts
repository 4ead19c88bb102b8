/**
 * The LongMemEval loader on a small file written here in that format (test/fixtures): the
 * instances become conversations (user turns, dated sessions, the question last, abstention
 * as "not said"), a diligent model answers them through workmem and the full history, and a
 * malformed file is refused with the line named.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadLongMemEval, parseLongMemEval, runEval } from '../../src/eval/index.js';
import { diligent, policyModel } from '../../src/testing/index.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';

const SAMPLE = join(import.meta.dirname, '..', 'fixtures', 'longmemeval-sample.json');
const text = readFileSync(SAMPLE, 'utf8');
/** The 1-based line of the first occurrence of `needle` in `body`. */
const lineIn = (body: string, needle: string): number => body.slice(0, body.indexOf(needle)).split('\n').length;

describe('LongMemEval loader', () => {
  it('turns each instance into a conversation: user turns by session, dated, then the question', () => {
    const suite = loadLongMemEval(SAMPLE);
    expect(suite.name).toBe('longmemeval');
    expect(suite.conversations.map((c) => c.id)).toEqual(['lme-sample-01', 'lme-sample-02', 'lme-sample-03_abs']);
    const [first, update, abstention] = suite.conversations;
    expect(first!.turns.map((t) => t.text)).toEqual([
      '(2024/05/11 (Sat) 09:30) I want to get fit this summer. My favourite hiking trail is the Cedar Ridge loop.',
      'About twelve kilometres with a steep middle part.',
      '(2024/05/19 (Sun) 14:05) Can you suggest stretches after a long walk?',
      'Thanks, I will try them tonight.',
      '(2024/06/02 (Sun) 18:10) What is my favourite hiking trail?',
    ]);
    expect(first!.turns.at(-1)!.question).toEqual({ category: 'single-session-user', expected: ['the Cedar Ridge loop'] });
    expect(update!.turns.at(-1)!.question).toEqual({ category: 'knowledge-update', expected: ['Peak Fitness'] });
    expect(abstention!.turns.at(-1)!.question).toEqual({ category: 'abstention', expected: [], notSaid: true });
  });

  it('a diligent model answers them through workmem and the full history', async () => {
    const counter = await loadTokenCounter('gpt-4o');
    const result = await runEval({
      llm: () => policyModel(diligent(), { model: 'testing:diligent', counter }),
      suite: loadLongMemEval(SAMPLE),
      arms: ['workmem-auto', 'full-history'],
    });
    for (const arm of result.summary) {
      expect(arm.accuracy, arm.arm).toEqual({ right: 3, asked: 3 });
      expect(Object.keys(arm.byCategory).sort()).toEqual(['abstention', 'knowledge-update', 'single-session-user']);
    }
  });

  it('names the line where a file stops being JSON', () => {
    const broken = text.replace('"question_type": "knowledge-update",', '"question_type": "knowledge-update"');
    expect(() => parseLongMemEval(broken, 'lme.json')).toThrow(
      new RegExp(`^lme\\.json: not valid JSON at line ${lineIn(text, '"question": "What is my gym?"')}: comma expected$`),
    );
  });

  it('names the line and the field of an instance of another shape', () => {
    const role = text.replace('"role": "assistant",\n          "content": "Good luck', '"role": "bot",\n          "content": "Good luck');
    expect(() => parseLongMemEval(role, 'lme.json')).toThrow(
      `lme.json: line ${lineIn(role, '"role": "bot"')}: instance 2 (lme-sample-02): haystack_sessions[2][1].role: Invalid option`,
    );
    // A field missing: the line where its instance begins.
    const missing = text.replace('"question": "What is my car model?",', '');
    expect(() => parseLongMemEval(missing, 'lme.json')).toThrow(
      `lme.json: line ${lineIn(missing, '"question_id": "lme-sample-03_abs"') - 1}: instance 3 (lme-sample-03_abs): question:`,
    );
  });

  it('refuses a file that is not an array of instances, or an empty one', () => {
    expect(() => parseLongMemEval('{"question_id": "x"}', 'lme.json')).toThrow(
      'lme.json: line 1: expected a JSON array of LongMemEval instances',
    );
    expect(() => parseLongMemEval('[]', 'lme.json')).toThrow('lme.json: the array holds no instances');
    expect(() => loadLongMemEval('/nonexistent/lme.json')).toThrow(/--longmemeval \/nonexistent\/lme\.json: ENOENT/);
  });
});
