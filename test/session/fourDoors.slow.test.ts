/**
 * Issue 26's suite: the same 40-turn conversation (gardenConversation.ts: facts early,
 * questions late, a host tool, compact_history calls, a fallback at 75 %, phase 2) through
 * every door (doors.ts). What the server receives is compared with what it receives from a
 * Session, request by request, as JSON text: byte for byte once each door's listed
 * differences are undone. A difference is listed with why it exists (the same list is in
 * docs/ai-sdk.md and docs/langchain.md), and each listed one must occur, so the list cannot
 * go stale. The answers, the memory and its writes, the compactions, and each turn's requests
 * and usage as the server reported it agree; so does the caching each session takes its
 * provider to have (all 'automatic' here), on which its memory refreshes depend. All of it under the seed's layout and under the
 * default (phase 2's window held, the notebook's changes in the tail).
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUMMARIZER_MARK } from '../../src/compaction/summarizer.js';
import { SEED_LAYOUT } from '../../src/eval/arms.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import { readTrace } from '../../src/viz/vizServer.js';
import { ofType, tempHome } from '../helpers.js';
import { sentFromTrace } from '../viz/traceRequests.js';
import { runDoor, type DoorName, type DoorRun } from './doors.js';

type Body = Record<string, unknown> & { messages: { role: string; content: unknown; tool_calls?: unknown[] }[] };
const isSummary = (b: Body): boolean => typeof b.messages[0]?.content === 'string' && b.messages[0].content.startsWith(SUMMARIZER_MARK);

/** A known difference, undone on a copy of both bodies. */
interface Difference {
  name: string;
  undo(session: Body, door: Body): void;
}

const dropStream = (b: Body): void => void (delete b.stream, delete b.stream_options);
const withNullContent = (b: Body): void =>
  b.messages.forEach((m) => {
    if (m.role === 'assistant' && m.content === '' && m.tool_calls?.length) m.content = null;
  });

const DIFFERENCES: Record<string, Difference> = {
  // The host's loop asked for the whole answer at once (generateText, ToolLoopAgent.generate,
  // LangChain's invoke): no stream flags, or stream: false; a Session always streams.
  wholeAnswer: { name: 'wholeAnswer', undo: (s, d) => void (!isSummary(s) && (dropStream(s), dropStream(d))) },
  // aiSdkModel streams compaction summaries; openaiChat asks for them whole.
  streamedSummary: { name: 'streamedSummary', undo: (s, d) => void (isSummary(s) && (dropStream(s), dropStream(d))) },
  // The mock receives a prompt, not a body: rebuilt as messages, tools and max_tokens, with no stream flags.
  promptOnly: { name: 'promptOnly', undo: (s) => dropStream(s) },
  // The AI SDK's OpenAI-compatible provider names the tool choice that is the default anyway.
  toolChoiceAuto: {
    name: 'toolChoiceAuto',
    undo: (_s, d) => {
      if (d.tool_choice !== undefined) expect(d.tool_choice).toBe('auto');
      delete d.tool_choice;
    },
  },
  // A LangChain AIMessage has no null content: an answer that only called tools is sent with "".
  emptyContent: { name: 'emptyContent', undo: (_s, d) => withNullContent(d) },
  // LangChain's chat models take the output limit when they are made, not per call: a summary
  // is asked for with the model's maxTokens (here workmem's reserve), not the summary's own limit.
  summaryLimit: { name: 'summaryLimit', undo: (s, d) => void (isSummary(s) && (d.max_tokens = s.max_tokens)) },
  // In a host's loop the host runs the tool calls of an answer and hands their results over with
  // its next call: compact_history called after a write of the same answer counts the history
  // without the write's result, which a Session has already logged. Only those figures differ.
  historyFigures: { name: 'historyFigures', undo: (s, d) => unfigure(s, d) },
  // Each client writes an object's keys in its own order (the body's; ChatOpenAI's tool messages). Last: the others leave the same keys.
  keyOrder: { name: 'keyOrder', undo: (s, d) => reorder(s, d) },
};

const HOST_LOOP = ['historyFigures'];
const AI_SDK_WIRE = ['keyOrder', 'toolChoiceAuto', 'streamedSummary', ...HOST_LOOP];
const LANGCHAIN_WIRE = ['keyOrder', 'emptyContent', 'summaryLimit', ...HOST_LOOP];
const DOORS: { door: DoorName; differences: string[] }[] = [
  { door: 'generateText', differences: ['wholeAnswer', ...AI_SDK_WIRE] },
  { door: 'streamText', differences: AI_SDK_WIRE },
  { door: 'ToolLoopAgent', differences: ['wholeAnswer', ...AI_SDK_WIRE] },
  { door: 'MockLanguageModelV3', differences: ['promptOnly', ...HOST_LOOP] },
  { door: 'createAgent (invoke)', differences: ['wholeAnswer', ...LANGCHAIN_WIRE] },
  { door: 'createAgent (stream)', differences: LANGCHAIN_WIRE },
];

/** `door`'s keys in `session`'s order, at every depth where both hold the same keys. */
function reorder(session: unknown, door: unknown): void {
  if (!session || !door || typeof session !== 'object' || typeof door !== 'object') return;
  if (Array.isArray(session) && Array.isArray(door)) return session.forEach((s, i) => reorder(s, door[i]));
  const s = session as Record<string, unknown>;
  const d = door as Record<string, unknown>;
  const keys = Object.keys(s);
  if (keys.length === Object.keys(d).length && keys.every((k) => k in d)) {
    const values = keys.map((k) => [k, d[k]] as const);
    for (const k of keys) delete d[k];
    for (const [k, v] of values) d[k] = v;
  }
  for (const k of keys) reorder(s[k], d[k]);
}

const FIGURES = /(The history holds |History: )([\d,]+)( → ([\d,]+))? tokens/g;
/** compact_history's figures taken out of both, once checked: the door's are lower, all by the same count. */
function unfigure(session: Body, door: Body): void {
  door.messages.forEach((m, i) => {
    const theirs = session.messages[i];
    if (typeof m.content !== 'string' || typeof theirs?.content !== 'string' || m.content === theirs.content) return;
    const numbers = (text: string) =>
      [...text.matchAll(FIGURES)].flatMap((f) => [f[2]!, f[4]].filter(Boolean).map((n) => Number(n!.replace(/,/g, ''))));
    const [ours, sessions] = [numbers(m.content), numbers(theirs.content)];
    if (!ours.length || ours.length !== sessions.length) return;
    const gaps = new Set(ours.map((n, j) => sessions[j]! - n));
    expect(gaps.size, `one gap in ${m.content}`).toBe(1);
    expect([...gaps][0]).toBeGreaterThan(0);
    m.content = m.content.replace(FIGURES, '$1N tokens');
    theirs.content = theirs.content.replace(FIGURES, '$1N tokens');
  });
}

/**
 * The session's trace holds the requests the door sent (the visualizer's context view and
 * its timeline read them): each, rebuilt from the trace, is the one the model got.
 */
function expectTraced(run: DoorRun, door: string, differences: string[]): void {
  const traced = sentFromTrace(readTrace(join(run.dir, 'trace.jsonl')).records).map((r) => r.messages);
  const sent = run.requests
    .map((text) => JSON.parse(text) as Body)
    .filter((body) => !isSummary(body))
    .map((body) => {
      if (differences.includes('emptyContent')) withNullContent(body);
      return body.messages;
    });
  expect(traced.length, `${door}: requests traced`).toBe(sent.length);
  traced.forEach((messages, i) => expect(messages, `${door}: request ${i + 1} as traced`).toEqual(sent[i]));
}

/**
 * The seed's layout calls compact_history (its phase 2 requests are fuller); under the default
 * the model never needs to, and so a host's loop never counts a write's result differently.
 */
const LAYOUTS: { layout: string; settings?: SettingsOverrides; compactions: ('llm' | 'fallback' | 'horizon')[] }[] = [
  { layout: "the seed's layout", settings: SEED_LAYOUT, compactions: ['llm', 'fallback', 'horizon'] },
  { layout: 'the default layout', compactions: ['fallback', 'horizon'] },
];

describe.each(LAYOUTS)('the same conversation through every door, $layout', ({ settings, compactions: reasons }) => {
  let session: DoorRun;
  beforeAll(async () => {
    session = await runDoor('Session', tempHome(), settings);
  });

  it('a Session: memory written, compactions, a fallback at 75 %, phase 2, the late facts answered', () => {
    const { events, answers } = session;
    // openaiChat without cacheControl: each door's session must cache alike for its requests to be the same.
    expect(session.caching).toBe('automatic');
    expectTraced(session, 'Session', []);
    expect(answers).toHaveLength(40);
    expect(ofType(events, 'memory_updated').length).toBeGreaterThan(10);
    const compacted = ofType(events, 'compaction_end').filter((e) => e.replaced > 0);
    for (const reason of reasons)
      expect(
        compacted.map((e) => e.reason),
        reason,
      ).toContain(reason);
    expect(ofType(events, 'mode_changed').some((e) => e.to === 'phase2')).toBe(true);
    expect(ofType(events, 'tool_end').filter((e) => e.name === 'weather')).toHaveLength(7);
    expect(answers.slice(-10)).toEqual(Array.from({ length: 10 }, (_, i) => `Your plant${i + 1} is rose${i + 1}.`));
  });

  it.each(DOORS)(
    '$door: the requests of a Session, byte for byte but for its listed differences',
    async ({ door, differences: listed }) => {
      const differences = reasons.includes('llm') ? listed : listed.filter((d) => d !== 'historyFigures');
      const run = await runDoor(door, tempHome(), settings);
      // The same provider caching as the Session's (HostLoop.caching), else its memory refreshes would differ by design.
      expect(run.caching, door).toBe(session.caching);
      expect(run.requests.length, door).toBe(session.requests.length);
      const seen = new Set<string>();
      run.requests.forEach((text, i) => {
        const ours = JSON.parse(session.requests[i]!) as Body;
        const theirs = JSON.parse(text) as Body;
        for (const name of Object.keys(DIFFERENCES).filter((n) => differences.includes(n))) {
          const before = JSON.stringify([ours, theirs]);
          DIFFERENCES[name]!.undo(ours, theirs);
          if (JSON.stringify([ours, theirs]) !== before) seen.add(name);
        }
        expect(JSON.stringify(theirs), `${door}: request ${i + 1}`).toBe(JSON.stringify(ours));
      });
      expect([...seen].sort(), `${door}: the differences that occurred`).toEqual([...differences].sort());
      expectTraced(run, door, differences);

      expect(run.answers, door).toEqual(session.answers);
      expect(run.memory, door).toBe(session.memory);
      const writes = (r: DoorRun) => ofType(r.events, 'memory_updated').map(({ sessionId: _id, ...write }) => write);
      expect(writes(run), door).toEqual(writes(session));
      const turns = (r: DoorRun) =>
        ofType(r.events, 'turn_end').map(({ turn, status, text, requests, usage }) => ({ turn, status, text, requests, usage }));
      expect(turns(run), door).toEqual(turns(session));
      const compactions = (r: DoorRun) =>
        ofType(r.events, 'compaction_end').map(({ reason, turn, replaced }) => ({ reason, turn, replaced }));
      expect(compactions(run), door).toEqual(compactions(session));
    },
  );
});
