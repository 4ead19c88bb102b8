/**
 * protocolFollower: a deterministic, rule-based stand-in for an LLM that follows the
 * working-memory protocol using only what is in the request it receives.
 *
 * - Facts are stated as "my <key> is <value>." (or "我的<key>是<value>。") and asked as
 *   "What is my <key>?" (or "我的<key>是什么？").
 * - When the user states facts it updates overview.md (`write`) with every fact it can
 *   still see (memory + visible history), but before any reminder only with probability
 *   1 − forgetfulness; when reminded it always does (unless `dropsWrites` drops that write).
 * - It answers from its memory and the visible history, and says it does not know otherwise.
 * - It calls compact_history (when offered) at the compression guide's thresholds, and
 *   with `compactsEvery` every few turns besides.
 * - "Use the <name> tool with <input>." (or "请用 <name> 工具查看<input>。") calls that tool
 *   with { input } (with <input> itself when it is a JSON object), when it is offered;
 *   several such sentences in one message are several calls in one answer (parallel calls).
 * - Asked for structured output (`response_format`), it answers in it: a JSON object whose
 *   first string property holds its answer.
 * - workmem's tools are found as the prompt names them: under their own names, or prefixed
 *   (`workmem_write`) when the client's tools have those names (docs/proxy.md, "Tools").
 * - Asked for a summary (by workmem's summarizer), it lists the facts it can see (with
 *   `summaries: 'no-facts'`, none of them).
 * - With `recall` it forgets as models do in long contexts: each fact it would use from
 *   the request (to answer, or to record from the history) is recalled with the probability
 *   `recall` gives for the tokens between it and the end of the request and the request's
 *   length (recallCurves.ts); copying its own memory into a rewrite is not recall, and the
 *   message it is answering is always read.
 * It reads its memory wherever workmem puts it: in the system message, at the start of the
 * last message (memoryPosition 'after-history'), and with the changes since in the tail
 * (`<working_memory_update>`, memoryRefresh 'when-cheap').
 * The behaviour profiles (behaviourProfiles.ts) are these options, named.
 * Its randomness is seeded by `seed` and the user's message, so a request always gets
 * the same reply.
 */
import { SUMMARIZER_MARK } from '../compaction/summarizer.js';
import { applyMemoryUpdate } from '../prompt/memoryUpdate.js';
import { asText, Positions, type Recall } from './requestPositions.js';
import { argumentsOf, ownTool, structured } from './requestShapes.js';
import type { ChatRequest, Policy, PolicyReply } from './wire.js';

export type { Recall };

export interface ProtocolFollowerOptions {
  seed?: number;
  /** Probability of not recording a stated fact before being reminded (0–1). */
  forgetfulness?: number;
  /** Whether it calls compact_history at the guide's thresholds (default true). */
  compacts?: boolean;
  /** Probability that a write it means to make is not made, reminded or not (0–1, default 0). */
  dropsWrites?: number;
  /** Also calls compact_history at the start of one user turn in n on average, whatever the percentage. */
  compactsEvery?: number;
  /** What its summaries keep: every fact it sees (default), or only the goal and the progress. */
  summaries?: 'facts' | 'no-facts';
  /** Forgetting in long contexts: without it, every fact in the request is seen. */
  recall?: Recall;
}

const TAIL = '\n\n<context_meta>';
const TOOL_REQUEST = /\buse the ([a-z_][a-z0-9_]*) tool(?: with (.+?))?[.!]?$/i;
const ZH_TOOL_REQUEST = /请用\s*([a-z_][a-z0-9_]*)\s*工具(?:查看)?(.*?)[。！]?$/i;
const COMPACTION_NOTE = '[Earlier conversation compacted';
/** How a peer agent without workmem (src/eval/peerAgent.ts) opens the summary it carries. */
const SUMMARY_NOTE = '[Summary of the earlier conversation]';
const isNote = (content: string): boolean => content.startsWith(COMPACTION_NOTE) || content.startsWith(SUMMARY_NOTE);
const MEMORY_BLOCK = /<working_memory[^>]*>\n([\s\S]*?)\n<\/working_memory>/;
/** With memoryPosition 'after-history' the memory block opens the last message, up to the end of the detail index. */
const HEAD_END = '</detail_index>\n\n';

interface Fact {
  key: string;
  value: string;
  zh: boolean;
  /** Tokens between the fact and the end of the request (set when recall is modelled). */
  after?: number;
}

export function protocolFollower(options: ProtocolFollowerOptions = {}): Policy {
  const seed = options.seed ?? 1;
  const forgetfulness = options.forgetfulness ?? 0;
  if (!(forgetfulness >= 0 && forgetfulness <= 1)) throw new RangeError(`forgetfulness must be between 0 and 1, got ${forgetfulness}`);

  const compacts = options.compacts ?? true;
  const dropsWrites = options.dropsWrites ?? 0;
  if (!(dropsWrites >= 0 && dropsWrites <= 1)) throw new RangeError(`dropsWrites must be between 0 and 1, got ${dropsWrites}`);
  const every = options.compactsEvery;
  const recall = options.recall;
  return (sent) => {
    const request = asText(sent);
    const positions = recall ? new Positions(request.messages, recall) : null;
    // What it brings back from the request: every fact, or (with recall) those it recalls, each draw its own.
    const recalled = (facts: Fact[], salt: string): Fact[] =>
      !recall || !positions
        ? facts
        : facts.filter(
            (f, i) =>
              f.after === undefined ||
              random(seed + 3, `${salt}\u0000${i}\u0000${f.key}\u0000${f.value}\u0000${request.messages.length}`) <
                recall.probability(f.after, positions.total),
          );
    if (request.messages[0]?.role === 'system' && request.messages[0].content.startsWith(SUMMARIZER_MARK))
      return { content: summarise(request, options.summaries !== 'no-facts', positions, recalled) };
    const view = readRequest(request, positions);
    if (!view.userText) return { content: 'OK.' };
    const last = request.messages.at(-1)!;
    // Its memory is copied into a rewrite as it stands: that is not recall.
    const known = new Map(view.memoryFacts.map((f) => [f.key, f]));
    const stated = statedFacts(view.userText);
    // Like a careful model, a write records everything still visible (and recalled), not just this turn.
    const seen = [...recalled(view.visibleFacts, `write ${view.userText}`), ...stated];
    const missing = seen.some((f) => known.get(f.key)?.value !== f.value);
    const writeMemory = () => {
      for (const fact of seen) known.set(fact.key, fact);
      return {
        name: view.write!,
        arguments: JSON.stringify({ path: 'working-memory/overview.md', content: renderMemory(view.userText, [...known.values()]) }),
      };
    };
    const calls: NonNullable<PolicyReply['toolCalls']> = [];
    // A write it means to make, unless this one is dropped (the same request, the same choice).
    const writes = () => view.write !== null && random(seed + 1, view.userText + request.messages.length) >= dropsWrites;
    if (last.role === 'user') {
      const due = every !== undefined && random(seed + 2, view.userText) < 1 / every;
      const compactTool = ownTool(view.tools, 'compact_history');
      const compaction = compactTool ? ((compacts ? compactionFor(view) : null) ?? (due ? EAGER : null)) : null;
      const record = stated.length > 0 && random(seed, view.userText) >= forgetfulness;
      // Before compacting, it writes down what it still needs: the compacted part leaves its sight.
      if ((view.reminded || record || (compaction && missing)) && writes()) calls.push(writeMemory());
      if (compaction) calls.push({ name: compactTool!, arguments: JSON.stringify(compaction) });
      for (const sentence of view.userText.split(/(?<=[.!。！])\s*(?=use the |请用)/i)) {
        const asked = TOOL_REQUEST.exec(sentence.trim()) ?? ZH_TOOL_REQUEST.exec(sentence.trim());
        if (asked && view.tools.has(asked[1]!)) calls.push({ name: asked[1]!, arguments: argumentsOf(asked[2] ?? '') });
      }
    } else if (view.reminded && !view.wroteThisTurn && writes()) {
      // A reminder is heeded at once, also in the middle of a turn.
      calls.push(writeMemory());
    }
    if (calls.length)
      return {
        toolCalls: calls.map((c, i) => ({ ...c, id: `call_${hash(view.userText + i + request.messages.length).toString(36)}_${i}` })),
      };
    return {
      content: structured(
        request,
        answer({
          ...view,
          visibleFacts: recalled(view.visibleFacts, `answer ${view.userText}`),
          memoryFacts: recalled(view.memoryFacts, `memory ${view.userText}`),
        }),
      ),
    };
  };
}

interface RequestView {
  userText: string;
  /** workmem's write tool as sent, when offered. */
  write: string | null;
  memoryFacts: Fact[];
  visibleFacts: Fact[];
  reminded: boolean;
  percent: number;
  tools: Set<string>;
  largeToolOutputs: number;
  /** It already wrote overview.md in the current turn. */
  wroteThisTurn: boolean;
}

function readRequest(request: ChatRequest, positions: Positions | null): RequestView {
  const messages = request.messages;
  const lastContent = messages.at(-1)?.content ?? '';
  const tailAt = lastContent.lastIndexOf(TAIL);
  const tail = tailAt >= 0 ? lastContent.slice(tailAt) : '';
  // In a system message (the memory may have one of its own), or at the start of the last message
  // (memoryPosition 'after-history'); and the changes since that copy in the tail, where there are.
  const systems = messages.flatMap((m, i) => (m.role === 'system' ? [i] : []));
  const inSystem = systems.find((i) => MEMORY_BLOCK.test(messages[i]!.content ?? ''));
  const block = inSystem !== undefined ? (messages[inSystem]!.content ?? '') : headOf(lastContent);
  const memory = applyMemoryUpdate(MEMORY_BLOCK.exec(block)?.[1] ?? '', tail);
  const memoryAt = inSystem ?? messages.length - 1;
  const users = messages.flatMap((m, i) => (m.role === 'user' && !isNote(m.content) ? [{ m, i }] : []));
  let percent = 0;
  try {
    percent = Number(JSON.parse(/<context_meta>\n(.*)\n<\/context_meta>/.exec(tail)?.[1] ?? '{}').tokens_percent) || 0;
  } catch {
    percent = 0;
  }
  const tools = new Set((request.tools ?? []).map((t) => t.function.name));
  const write = ownTool(tools, 'write');
  const lastUser = users.at(-1);
  // Where a fact stands, for recall; the message being answered is always read.
  const placed = (facts: Fact[], index: number, content: string): Fact[] =>
    !positions || index === lastUser?.i
      ? facts
      : facts.map((f) => ({ ...f, after: positions.after(index, Math.max(0, content.indexOf(f.value))) }));
  const memoryText = messages[memoryAt]?.content ?? '';
  return {
    userText: strip(lastUser?.m.content ?? ''),
    write,
    memoryFacts: placed(memoryFacts(memory), memoryAt, memoryText).map((f) =>
      // A fact only in the tail's update stands at the end.
      memoryText.includes(f.value) || !positions ? f : { ...f, after: 0 },
    ),
    visibleFacts: [
      ...messages.flatMap((m, i) => (m.role === 'user' && isNote(m.content) ? placed(memoryFacts(m.content ?? ''), i, m.content) : [])),
      ...users.flatMap(({ m, i }) => placed(statedFacts(strip(m.content)), i, m.content)),
    ],
    reminded: tail.includes('<memory_reminder'),
    percent,
    tools,
    largeToolOutputs: messages.filter(
      (m) => m.role === 'tool' && withoutHead(m.content).length > 2000 && !withoutHead(m.content).startsWith('[Tool output moved'),
    ).length,
    wroteThisTurn: messages
      .slice(lastUser ? lastUser.i : messages.length)
      .some(
        (m) =>
          m.role === 'assistant' &&
          (m.tool_calls ?? []).some((c) => c.function.name === write && c.function.arguments.includes('overview.md')),
      ),
  };
}

function strip(content: string): string {
  const at = content.lastIndexOf(TAIL);
  const text = withoutHead(at >= 0 ? content.slice(0, at) : content).trim();
  // A message the client quoted whole ("…", as opencode's run sends one) is read without its quotes.
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : text;
}

/** The memory block that opens a message, when it does ('' otherwise). */
function headOf(content: string): string {
  if (!content.startsWith('<working_memory')) return '';
  const end = content.indexOf(HEAD_END);
  return end < 0 ? '' : content.slice(0, end + HEAD_END.length);
}

function withoutHead(content: string): string {
  return content.slice(headOf(content).length);
}

/** Clauses: sentences, split again at commas and at "and" before my/our/the. */
const CLAUSE_BREAK = /(?<=[.!?])\s+|\n+|[,;]\s+|\s+and\s+(?=(?:my|our|the)\s)/i;
const EN_FACT = /^(?:.*?\b)?(?:my|our|the)\s+([a-z][a-z0-9 _-]{0,40}?)\s+(?:is|are)\s+(.+?)[.!]?$/i;
const EN_QUESTION = /\bwhat\s+(?:is|are)\s+(?:my|our|the)\s+([a-z][a-z0-9 _-]{0,40}?)\s*\?/gi;
const ZH_FACT = /我的([^，。！？是\s]{1,12})是(?!什么)([^。！？\n]+)[。！]/g;
const ZH_QUESTION = /我的([^，。！？是\s]{1,12})是什么[？?]/g;

function normalise(key: string): string {
  return key.toLowerCase().replace(/\s+/g, ' ').trim();
}

export function statedFacts(text: string): Fact[] {
  const facts: Fact[] = [];
  for (const clause of text.split(CLAUSE_BREAK)) {
    const m = clause.trim().endsWith('?') ? null : EN_FACT.exec(clause.trim());
    if (m) facts.push({ key: normalise(m[1]!), value: m[2]!.trim(), zh: false });
  }
  for (const m of text.matchAll(ZH_FACT)) facts.push({ key: m[1]!, value: m[2]!.trim(), zh: true });
  return facts;
}

function questions(text: string): { key: string; zh: boolean }[] {
  return [
    ...[...text.matchAll(EN_QUESTION)].map((m) => ({ key: normalise(m[1]!), zh: false })),
    ...[...text.matchAll(ZH_QUESTION)].map((m) => ({ key: m[1]!, zh: true })),
  ];
}

function memoryFacts(memory: string): Fact[] {
  return [...memory.matchAll(/^- ([^:\n]{1,60}): (.+)$/gm)].map((m) => ({
    key: m[1]!.trim(),
    value: m[2]!.trim(),
    zh: /[\u4e00-\u9fff]/.test(m[1]!),
  }));
}

function renderMemory(task: string, facts: Fact[]): string {
  const firstLine = task.split('\n')[0]!.slice(0, 100);
  return `# Working Memory\n\n## Current task\n${firstLine}\n\n## Known facts\n${facts.map((f) => `- ${f.key}: ${f.value}`).join('\n')}\n`;
}

function answer(view: RequestView): string {
  const known = new Map<string, string>();
  for (const f of view.visibleFacts) known.set(f.key, f.value);
  for (const f of view.memoryFacts) known.set(f.key, f.value);
  const parts: string[] = [];
  for (const q of questions(view.userText)) {
    const value = known.get(q.key);
    if (q.zh) parts.push(value !== undefined ? `你的${q.key}是${value}。` : `我不知道你的${q.key}。`);
    else parts.push(value !== undefined ? `Your ${q.key} is ${value}.` : `I don't know your ${q.key}.`);
  }
  for (const f of statedFacts(view.userText))
    parts.push(f.zh ? `记下了：你的${f.key}是${f.value}。` : `Noted: your ${f.key} is ${f.value}.`);
  return parts.length ? parts.join(' ') : `OK: ${view.userText.slice(0, 60)}`;
}

/** A summary in the five sections workmem's summarizer asks for, with the facts it sees (or none). */
function summarise(
  request: ChatRequest,
  keepsFacts: boolean,
  positions: Positions | null,
  recalled: (facts: Fact[], salt: string) => Fact[],
): string {
  const text = request.messages.map((m) => m.content ?? '').join('\n');
  // Placed message by message for recall, in the same order: memory lines first, then stated facts.
  const placed = (parse: (t: string) => Fact[]): Fact[] =>
    request.messages.flatMap((m, i) =>
      parse(m.content ?? '').map((f) => ({ ...f, after: positions!.after(i, Math.max(0, (m.content ?? '').indexOf(f.value))) })),
    );
  const found = positions ? [...placed(memoryFacts), ...placed(statedFacts)] : [...memoryFacts(text), ...statedFacts(text)];
  const facts = new Map<string, string>();
  if (keepsFacts) for (const f of recalled(found, 'summary')) facts.set(f.key, f.value);
  const lines = [...facts].map(([k, v]) => `- ${k}: ${v}`);
  return `## Goal\n- Help the user.\n\n## Decisions\n- none recorded\n\n## Progress\n- ${request.messages.length} messages summarised\n\n## Open items\n- none\n\n## Key facts\n${lines.join('\n') || '- none'}`;
}

/** The compression guide (docs/design.md §2.2): act on tokens_percent at the start of a turn. */
function compactionFor(view: RequestView): Record<string, unknown> | null {
  if (view.percent >= 60) return { target: 'all', strategy: 'archive', keep_recent: 3 };
  if (view.percent >= 40) return { target: 'conversation', strategy: 'archive', keep_recent: 3 };
  if (view.percent >= 20 && view.largeToolOutputs > 3) return { target: 'tools', strategy: 'archive', keep_recent: 3 };
  return null;
}

/** What an eager model compacts every few turns: the conversation but the last 3 turns, archived. */
const EAGER = { target: 'conversation', strategy: 'archive', keep_recent: 3 };

/** A number in [0, 1) from the seed and a text: the same request, the same choice. */
function random(seed: number, text: string): number {
  let t = (seed ^ hash(text)) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}
