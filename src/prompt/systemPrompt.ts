/**
 * The stable part of every request: the role, the working-memory duties, the compression
 * guide and how the memory tools are used. It never contains per-turn values (token
 * counts, dates, reminders), so the provider's prefix cache keeps hitting.
 */
export interface SystemPromptOptions {
  /** The host's own instructions; they come first. */
  instructions?: string;
  /** Share of the window at which the system compacts by itself (0.75 = 75 %). */
  fallbackThreshold: number;
  /** Share of the window under which compact_history compacts nothing: the guide's first band ends there (0 or none: the seed's 20 %). */
  compactHistoryFloor?: number;
  /** Names of the tools the model has, as sent, so the guide mentions only those. */
  toolNames: readonly string[];
  /** The prefix workmem's own tools are sent with (toolNaming.ts): the guide names them as sent. Default none. */
  toolPrefix?: string;
}

/** Sessions with the same options share one string (it is a few KB each). */
const built = new Map<string, string>();

export function systemPrompt(options: SystemPromptOptions): string {
  const key = JSON.stringify([
    options.instructions ?? '',
    options.fallbackThreshold,
    options.compactHistoryFloor ?? null,
    options.toolNames,
    options.toolPrefix ?? '',
  ]);
  let text = built.get(key);
  if (text === undefined) {
    text = compose(options);
    if (built.size < 64) built.set(key, text);
  }
  return text;
}

/** The compression guide's bands (the seed's 20, 40 and 60 %), each opening where the one before it ends. */
const BANDS = [20, 40, 60] as const;

function compose(options: SystemPromptOptions): string {
  const fallback = Math.round(options.fallbackThreshold * 100);
  // Where compact_history starts to compact, the guide's first band ends (a floor of 0 compacts always: the seed's 20).
  const floor = Math.round((options.compactHistoryFloor ?? 0) * 100) || BANDS[0];
  const [light, medium, heavy] = BANDS.map((b) => Math.min(Math.max(b, floor), fallback)) as [number, number, number];
  const band = (from: number, to: number, text: string): string[] => (from < to ? [`- ${from}-${to} %: ${text}`] : []);
  // workmem's own tools by the names they are sent under.
  const p = options.toolPrefix ?? '';
  const has = (name: string): boolean => options.toolNames.includes(p + name);
  const parts: string[] = [];
  if (options.instructions?.trim()) parts.push(options.instructions.trim());
  parts.push(`## Working memory

You have an external memory, working-memory/overview.md, that persists across requests and sessions. Its current content is shown below in <working_memory>, on every request. The conversation history you see may be shortened or left out entirely once your memory is maintained, so anything you will need later must be in that file.

Your duties:
- Record facts the user states, decisions and their reasons, the current task and its progress, and open questions, as soon as they come up.
- Keep overview.md short (under 5 KB): move details to working-memory/detail/<topic>.md and read them back when needed. Finished work can go to working-memory/archive/.
- Update the memory in the same response in which you learn something; it costs no extra round trip.
- When you are reminded to update your memory, do it before anything else.

Use ${p}write to replace a whole file and ${p}edit to change one passage. Paths are relative to the session, e.g. working-memory/overview.md or working-memory/detail/design.md; nothing outside working-memory/ is reachable.`);
  parts.push(`## Context budget

At the end of each request you get <context_meta> with tokens_used, tokens_max, tokens_percent, messages_in_history (the messages of your history as it stands, sent or not), messages_sent (how many of them this request carries: once your working memory is maintained, only the recent turns are sent) and working_memory_size. Act on tokens_percent:
${[
  `- below ${light} %: normal work, no compaction needed`,
  ...band(light, medium, `light: drop redundant tool output${has('compact_history') ? ` (${p}compact_history target "tools")` : ''}`),
  ...band(
    medium,
    heavy,
    `medium: archive old discussions to working-memory/detail/${has('compact_history') ? ` (${p}compact_history target "conversation", strategy "archive")` : ''}`,
  ),
  ...band(
    heavy,
    fallback,
    `heavy: keep only key decisions and the current task${has('compact_history') ? ` (${p}compact_history target "all")` : ''}`,
  ),
].join('\n')}
- above ${fallback} %: the system compacts by itself; you should have acted before that
Always keep the last 3-5 turns, the current task and the key decisions. After a compaction, update overview.md with anything you still need.`);
  return parts.join('\n\n');
}
