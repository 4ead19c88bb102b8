/**
 * workmem's own suite, checked against its own answers: the sizes and languages the eval
 * promises, every category in every conversation, no line repeated, and each question's
 * expected answer what the user last said of it (read by protocolFollower's own reading of
 * facts), never a distractor's, and "not said" questions never said.
 */
import { describe, expect, it } from 'vitest';
import { builtInSuite, CATEGORIES } from '../../src/eval/index.js';
import { statedFacts } from '../../src/testing/index.js';
import { matches } from '../../src/eval/scoring.js';

const full = builtInSuite('full');
const small = builtInSuite('small');

/** "Quick check: what is my flight number?" / "提醒我一下，我的航班号是什么？" → the key asked. */
function keyAsked(text: string): string {
  const en = /what (?:is|are) (?:my|our|the) (.+?)\?/i.exec(text)?.[1];
  const zh = /我的(.+?)是什么？/.exec(text)?.[1];
  return (en ?? zh ?? '').toLowerCase();
}

describe("workmem's suite", () => {
  it('has at least 8 conversations of 60–400 turns, in English and Chinese', () => {
    expect(full.conversations.length).toBeGreaterThanOrEqual(8);
    for (const c of full.conversations) {
      expect(c.turns.length, c.id).toBeGreaterThanOrEqual(60);
      expect(c.turns.length, c.id).toBeLessThanOrEqual(400);
    }
    expect(new Set(full.conversations.map((c) => c.language))).toEqual(new Set(['en', 'zh']));
    expect(Math.max(...full.conversations.map((c) => c.turns.length))).toBe(400);
  });

  it('asks every category in every conversation, in the last part, after documents large enough to force compaction', () => {
    for (const c of [...full.conversations, ...small.conversations]) {
      const asked = new Set(c.turns.flatMap((t) => (t.question ? [t.question.category] : [])));
      expect([...asked].sort(), c.id).toEqual([...CATEGORIES].sort());
      const firstQuestion = c.turns.findIndex((t) => t.question);
      expect(firstQuestion / c.turns.length, c.id).toBeGreaterThan(full.conversations.includes(c) ? 0.6 : 0.5);
      const fetches = c.turns.flatMap((t, i) => (/fetch_document/.test(t.text) ? [i] : []));
      expect(fetches.length, c.id).toBeGreaterThanOrEqual(3);
      expect(fetches[0], c.id).toBeLessThan(firstQuestion);
    }
  });

  it('repeats no line within a conversation', () => {
    for (const c of [...full.conversations, ...small.conversations])
      expect(new Set(c.turns.map((t) => t.text)).size, c.id).toBe(c.turns.length);
  });

  it("expects what the user said last, never someone else's value, and never says what it asks as never said", () => {
    for (const c of [...full.conversations, ...small.conversations]) {
      c.turns.forEach((turn, i) => {
        const q = turn.question;
        if (!q) return;
        const key = keyAsked(turn.text);
        expect(key, turn.text).not.toBe('');
        const said = c.turns
          .slice(0, i)
          .flatMap((t) => statedFacts(t.text))
          .filter((f) => f.key.toLowerCase() === key);
        if (q.notSaid) {
          expect(said, `${c.id}: "${turn.text}" was said`).toEqual([]);
          return;
        }
        const last = said.at(-1)?.value ?? '';
        expect(matches(q, last), `${c.id}: "${turn.text}" expects ${q.expected.join(' / ')}, last said "${last}"`).toBe(true);
        for (const other of q.forbidden ?? []) expect(last).not.toContain(other);
      });
    }
  });

  it('the small suite is a few short conversations of the same topics', () => {
    expect(small.conversations.length).toBe(3);
    expect(small.conversations.every((c) => c.turns.length <= 60)).toBe(true);
    expect(new Set(small.conversations.map((c) => c.language))).toEqual(new Set(['en', 'zh']));
  });
});
