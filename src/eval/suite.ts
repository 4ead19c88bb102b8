/**
 * The eval's conversations: what a suite is (conversations of user turns, some of them
 * questions with expected answers), and workmem's own suite, generated from the topics of
 * suiteTopics.ts. Each conversation states the user's goal and a rule at the start,
 * plants facts early and asks them late, changes some facts (the latest must win), mentions
 * look-alike facts about other people (distractors), fetches documents large enough to force
 * compaction, and asks questions whose answer was never said.
 */
import { EN_TOPICS, ZH_TOPICS, type Topic } from './suiteTopics.js';

/** The question categories of workmem's suite; a LongMemEval file brings its own. */
export const CATEGORIES = ['early-fact', 'updated-fact', 'goal-rules', 'distractor', 'not-said'] as const;

/** What a question turn expects of the answer. */
export interface Question {
  /** e.g. 'early-fact', or a LongMemEval question_type. */
  category: string;
  /** The answer is right when it contains one of these (normalised); empty for a "not said" question. */
  expected: string[];
  /** The answer is wrong when it contains one of these: an old value, a distractor's. */
  forbidden?: string[];
  /** The right answer is that it was never said. */
  notSaid?: boolean;
}

/** One user message of a conversation, and what it asks when it is a question. */
export interface EvalTurn {
  /** What the user says. */
  text: string;
  question?: Question;
}

/** A conversation the eval plays through every arm. */
export interface Conversation {
  /** Unique within its suite; what the results file keeps it by. */
  id: string;
  title: string;
  /** The language of workmem's memory template and reminders for it. */
  language: 'en' | 'zh';
  /** The user's messages, in order. */
  turns: EvalTurn[];
}

/** A named list of conversations. */
export interface Suite {
  name: string;
  conversations: Conversation[];
}

/** The names of workmem's own suites: `full` (8 conversations, 60–400 turns) and `small` (3 short ones). */
export type SuiteName = 'full' | 'small';

/** workmem's own suite: `full` for a real run, `small` for a quick check (and the tests). */
export function builtInSuite(name: SuiteName = 'full'): Suite {
  const topics = [...EN_TOPICS, ...ZH_TOPICS];
  if (name === 'full') return { name, conversations: topics.map((t) => conversation(t, t.turns, 'full')) };
  const small = [EN_TOPICS[0]!, ZH_TOPICS[0]!, EN_TOPICS[1]!];
  return { name, conversations: small.map((t, i) => conversation(t, [48, 44, 52][i]!, 'small')) };
}

/** How a language says each kind of turn. */
interface Phrasing {
  opening(title: string, goal: string): string;
  rule(key: string, value: string): string;
  fact(key: string, value: string, i: number): string;
  update(key: string, value: string): string;
  distractor(whose: string, key: string, value: string): string;
  ask(key: string, i: number): string;
  askGoal: string;
  askRule(key: string): string;
  fetch(document: string): string;
  filler(subject: string, i: number): string;
}

/** "is", or "are" for a plural key ("opening hours"). */
const be = (key: string): string => (/[^su]s$/.test(key) ? 'are' : 'is');

const EN: Phrasing = {
  opening: (title, goal) => `Hi! I would like your help with ${title}. Our goal is ${goal}.`,
  rule: (key, value) => `One rule before we start: the rule for ${key} is ${value}.`,
  fact: (key, value, i) => `${['By the way', 'Also', 'For the record', 'Please note'][i % 4]}: my ${key} ${be(key)} ${value}.`,
  update: (key, value) => `Change of plan: my ${key} ${be(key)} ${value} now.`,
  distractor: (whose, key, value) => `Do not mix this up with mine: my ${whose}'s ${key} ${be(key)} ${value}.`,
  ask: (key, i) => `${['Quick check', 'Remind me', 'Before I forget', 'One more thing'][i % 4]}: what ${be(key)} my ${key}?`,
  askGoal: 'Let us step back for a moment: what is our goal?',
  askRule: (key) => `Remind me: what is the rule for ${key}?`,
  fetch: (document) => `Please use the fetch_document tool with ${document}.`,
  filler: (subject, i) =>
    `${['Any tips on', 'How would you approach', 'Could you give me a short checklist for', 'Which pitfalls should I watch for with', 'How much time should I plan for', 'Could you explain the trade-offs of', 'What would you do first about'][i % 7]} ${subject}?${['', ' I am short on time this week.', ' Last time this went badly.', ' Keep it brief please.'][Math.floor(i / 7) % 4]}`,
};

const ZH: Phrasing = {
  opening: (title, goal) => `你好！我想请你帮我${title}。我的目标是${goal}。`,
  rule: (key, value) => `先说一条规矩：我的${key}是${value}。`,
  fact: (key, value, i) => `${['顺便说一下', '另外', '记一下', '补充一点'][i % 4]}，我的${key}是${value}。`,
  update: (key, value) => `计划有变，更正一下：我的${key}是${value}。`,
  distractor: (whose, key, value) => `别搞混了：我${whose}的${key}是${value}，这个不是我的。`,
  ask: (key, i) => `${['提醒我一下', '我确认一下', '差点忘了', '再问一句'][i % 4]}，我的${key}是什么？`,
  askGoal: '我们先停一下：我的目标是什么？',
  askRule: (key) => `提醒我：我的${key}是什么？`,
  fetch: (document) => `请用 fetch_document 工具查看${document}。`,
  filler: (subject, i) =>
    [
      `关于${subject}，你有什么建议？`,
      `${subject}应该怎么安排比较好？`,
      `能不能帮我列一个${subject}的清单？`,
      `你觉得${subject}需要注意什么？`,
      `${subject}大概要花多少时间？`,
    ][i % 5]! + ['', '这周时间比较紧。', '上次这件事没做好。', '简单说说就行。'][Math.floor(i / 5) % 4]!,
};

/**
 * A topic as a conversation of `length` turns: the goal and the rule first, the early facts
 * and the first values of the facts that change in the first third, documents fetched through
 * the middle, the new values and the distractors in the middle, the questions in the last
 * quarter, and the topic's small talk in between.
 */
export function conversation(topic: Topic, length: number, size: SuiteName): Conversation {
  const say = topic.language === 'zh' ? ZH : EN;
  const facts = size === 'small' ? topic.facts.slice(0, 4) : topic.facts;
  const documents = size === 'small' ? topic.documents.slice(0, 3) : topic.documents;
  const slots: (EvalTurn | null)[] = Array.from({ length }, () => null);
  // The free turn nearest `at`, later ones first.
  const place = (at: number, turn: EvalTurn): void => {
    const from = Math.max(0, Math.min(length - 1, Math.round(at)));
    for (let d = 0; d < length; d++)
      for (const i of [from + d, from - d])
        if (i >= 0 && i < length && !slots[i]) {
          slots[i] = turn;
          return;
        }
    throw new Error(`suite: conversation ${topic.id} has more fixed turns than its ${length}`);
  };
  const [ruleKey, ruleValue] = topic.rule;
  place(0, { text: say.opening(topic.title, topic.goal) });
  place(1, { text: say.rule(ruleKey, ruleValue) });
  const early = [
    ...facts.map(([key, value]) => ({ key, value })),
    ...topic.updates.map(([key, old]) => ({ key, value: old })),
    ...topic.distractors.map(([key, own]) => ({ key, value: own })),
  ];
  early.forEach((f, i) => place(2 + i * 2, { text: say.fact(f.key, f.value, i) }));
  const earlyEnd = 2 + early.length * 2;
  documents.forEach((d, i) => place(earlyEnd + ((length * 0.7 - earlyEnd) * (i + 0.5)) / documents.length, { text: say.fetch(d) }));
  topic.updates.forEach(([key, , value], i) => place(length * 0.45 + i * 3, { text: say.update(key, value) }));
  topic.distractors.forEach(([key, , other, whose], i) => place(length * 0.55 + i * 3, { text: say.distractor(whose, key, other) }));

  const questions: EvalTurn[] = [
    ...facts.map(([key, value, ...also], i) => ({
      text: say.ask(key, i),
      question: { category: 'early-fact', expected: [value, ...also] },
    })),
    ...topic.updates.map(([key, old, value], i) => ({
      text: say.ask(key, i + 1),
      question: { category: 'updated-fact', expected: [value], forbidden: [old] },
    })),
    { text: say.askGoal, question: { category: 'goal-rules', expected: [topic.goalAnswer] } },
    { text: say.askRule(ruleKey), question: { category: 'goal-rules', expected: [topic.ruleAnswer ?? ruleValue] } },
    ...topic.distractors.map(([key, own, other], i) => ({
      text: say.ask(key, i + 2),
      question: { category: 'distractor', expected: [own], forbidden: [other] },
    })),
    ...topic.notSaid.map((key, i) => ({ text: say.ask(key, i + 3), question: { category: 'not-said', expected: [], notSaid: true } })),
  ];
  // Interleaved by category, so that every category is asked across the last quarter.
  const order = interleave(questions);
  const from = Math.min(Math.floor(length * 0.75), length - Math.ceil(order.length * 1.5));
  const step = (length - 1 - from) / Math.max(1, order.length - 1);
  order.forEach((q, i) => place(from + i * step, q));

  // Small talk: each subject in turn, then again in other words, so that no line repeats.
  let filler = 0;
  const subjects = topic.subjects.length;
  const turns = slots.map((turn) => {
    if (turn) return turn;
    const n = filler++;
    return { text: say.filler(topic.subjects[n % subjects]!, Math.floor(n / subjects)) };
  });
  return { id: size === 'full' ? topic.id : `${topic.id}-small`, title: topic.title, language: topic.language, turns };
}

/** One of each category in turn, keeping each category's order. */
function interleave(questions: EvalTurn[]): EvalTurn[] {
  const byCategory = new Map<string, EvalTurn[]>();
  for (const q of questions) byCategory.set(q.question!.category, [...(byCategory.get(q.question!.category) ?? []), q]);
  const out: EvalTurn[] = [];
  for (let round = 0; out.length < questions.length; round++)
    for (const list of byCategory.values()) if (list[round]) out.push(list[round]!);
  return out;
}
