/**
 * Structured summaries of history for compaction: goal, decisions, progress, open items,
 * key facts. The summarizer's own input is bounded: the transcript is cut into chunks
 * that fit, each chunk is summarised, and the summaries are combined the same way, so a
 * summary request can never overflow the window. Any failure returns null, and the
 * caller keeps the verbatim archive alone (a background summary throws instead: it is tried
 * again later).
 */
import type { HistoryItem } from '../history/historyView.js';
import type { LLM } from '../llm/llm.js';
import type { TokenUsage } from '../events.js';
import type { TokenCounter } from '../tokens/tokens.js';
import { renderTranscript } from '../history/transcript.js';

export type Summarizer = (items: readonly HistoryItem[], signal: AbortSignal) => Promise<string | null>;

/** The first line of every summarizer request (test policies recognise it by this). */
export const SUMMARIZER_MARK = "You compress part of an AI agent's conversation history into a structured summary.";

const SYSTEM = `${SUMMARIZER_MARK}
The summary replaces the original messages in the agent's context, so keep everything the agent will need:
names, numbers, paths, decisions and their reasons, what is done and what is not.
Answer with exactly these five sections, in markdown, as short bullet points:
## Goal
## Decisions
## Progress
## Open items
## Key facts
Do not add anything before or after them.`;

const SECTIONS = ['## Goal', '## Decisions', '## Progress', '## Open items', '## Key facts'];
const OUTPUT_TOKENS = 1024;
const MAX_CHUNK_TOKENS = 24_000;
/** What rendering an item for the summarizer adds to its own tokens: the turn's heading, the role's, the fence. */
const RENDERING_TOKENS = 16;

export interface SummarizerOptions {
  llm: LLM;
  counter: TokenCounter;
  /** The summarizer model's window (the session's, unless a compactionModel says otherwise). */
  contextWindow: number;
}

/** A summary and what its model calls cost (null: the server reported no usage). */
export interface Summary {
  text: string;
  usage: TokenUsage | null;
}

/**
 * The summary of items, made in the background: what it cost, or the reason it failed
 * (thrown). The session's background actor uses it (src/actors/backgroundSummary.ts).
 */
export type BackgroundSummarizer = (items: readonly HistoryItem[], signal: AbortSignal) => Promise<Summary>;

/** A summarizer on the model's `summarize` (non-streaming, maybe a cheaper model), or null if it has none. */
export function modelSummarizer(options: SummarizerOptions): Summarizer | null {
  const summarize = summaryOf(options, false);
  if (!summarize) return null;
  return async (items, signal) => {
    try {
      return (await summarize(items, signal)).text;
    } catch {
      return null;
    }
  };
}

/** The same summaries, asked for in the background (the model's `summarize` is told so), or null if it has none. */
export function backgroundSummarizer(options: SummarizerOptions): BackgroundSummarizer | null {
  return summaryOf(options, true);
}

function summaryOf(options: SummarizerOptions, background: boolean): BackgroundSummarizer | null {
  const { llm, counter } = options;
  const summarize = llm.summarize?.bind(llm);
  if (!summarize) return null;
  const overhead = counter.requestBase(SYSTEM, []) + 50;
  const chunkBudget = Math.max(500, Math.min(MAX_CHUNK_TOKENS, Math.floor((options.contextWindow - OUTPUT_TOKENS - overhead) * 0.8)));

  return async (items, signal) => {
    let usage: TokenUsage | null = null;
    const ask = async (text: string): Promise<string> => {
      const response = await summarize(
        {
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: text },
          ],
          tools: [],
          maxOutputTokens: OUTPUT_TOKENS,
        },
        background ? { signal, background: true } : { signal },
      );
      const u = response.usage;
      if (u) usage = sumOf(usage, { input: u.promptTokens, cached: u.cachedPromptTokens ?? 0, output: u.completionTokens });
      const content = response.message.content?.trim() ?? '';
      if (SECTIONS.filter((s) => content.includes(s)).length < 3) throw new Error('the summary did not have the sections asked for');
      return content;
    };
    // Each item's tokens were counted when it was added: only one over half a chunk is counted again, to be cut.
    let parts = chunk(
      items.map((item) => {
        const text = renderTranscript('', '', [item]).trim();
        return item.tokens + RENDERING_TOKENS <= chunkBudget / 2
          ? { text, tokens: item.tokens + RENDERING_TOKENS }
          : bounded(text, counter, Math.floor(chunkBudget / 2));
      }),
      chunkBudget,
    );
    for (let round = 0; round < 6; round++) {
      const summaries: string[] = [];
      for (const part of parts) summaries.push(await ask(`Summarise this part of the conversation:\n\n${part}`));
      if (summaries.length === 1) return { text: summaries[0]!, usage };
      parts = chunk(
        summaries.map((s, i) => {
          const text = `# Part ${i + 1}\n\n${s}`;
          return { text, tokens: counter.text(text) };
        }),
        chunkBudget,
      );
      if (parts.length === 1) return { text: await ask(`Combine these summaries of consecutive parts into one:\n\n${parts[0]}`), usage };
    }
    throw new Error('the summaries did not fit one request after 6 rounds');
  };
}

function sumOf(a: TokenUsage | null, b: TokenUsage): TokenUsage {
  return a ? { input: a.input + b.input, cached: a.cached + b.cached, output: a.output + b.output } : b;
}

/** Group texts into chunks of at most `budget` tokens (each text already fits). */
function chunk(texts: readonly { text: string; tokens: number }[], budget: number): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const { text, tokens: own } of texts) {
    const tokens = own + 2;
    if (current.length && size + tokens > budget) {
      chunks.push(current.join('\n\n'));
      current = [];
      size = 0;
    }
    current.push(text);
    size += tokens;
  }
  if (current.length) chunks.push(current.join('\n\n'));
  return chunks;
}

/** A text cut to about `budget` tokens, keeping its head and tail (the archive has it whole), and its tokens. */
function bounded(text: string, counter: TokenCounter, budget: number): { text: string; tokens: number } {
  const tokens = counter.text(text);
  if (tokens <= budget) return { text, tokens };
  const keep = Math.floor((text.length * budget) / tokens / 2);
  const cut = `${text.slice(0, keep)}\n\n[… ${tokens - budget} tokens left out here; the archive keeps them …]\n\n${text.slice(-keep)}`;
  return { text: cut, tokens: budget + 20 };
}
