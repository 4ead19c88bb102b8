/**
 * The two usual peers workmem is measured against, on the same model: an agent without
 * workmem that sends its system prompt, its tools and its whole history with every request
 * (naive full history), and one that, when a request would reach a share of the window
 * (75 %), summarises all but its last 3 turns (and the current one) with the same model and
 * carries the summary instead. Both run their tool calls in a plain loop; a malformed or
 * unknown call gets an error result, as agent frameworks do. The summary is asked with
 * workmem's own summarizer prompt, so both sides compress with the same instructions.
 */
import { modelSummarizer } from '../compaction/summarizer.js';
import type { ChatMessage } from '../history/messages.js';
import type { HistoryItem } from '../history/historyView.js';
import { LLMError, type CacheBreakpoint, type LLM, type LLMResponse } from '../llm/llm.js';
import { DEFAULT_RETRY, retryDelay } from '../settings/settings.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { Tool } from '../tools/tool.js';

/** How the summary a summarising peer carries opens (protocolFollower reads its facts by it). */
export const PEER_SUMMARY_NOTE = '[Summary of the earlier conversation]';

/** A peer's settings: its model, system prompt and tools, and when it summarises. */
export interface PeerOptions {
  llm: LLM;
  counter: TokenCounter;
  system: string;
  tools?: readonly Tool[];
  /** Summarise when a request would reach this share of `contextWindow`; null: never (full history). */
  summariseAt: number | null;
  contextWindow: number;
  /** Whole turns kept besides the current one when it summarises (default 3). */
  keepTurns?: number;
  /** Requests a turn may make before it stops (default 20). */
  maxRequestsPerTurn?: number;
  /** Tokens reserved for each answer (default the model's, at most 4,096). */
  maxOutputTokens?: number;
}

/** How one of the peer's turns ended. */
export interface PeerTurn {
  text: string;
  /** The turn's last request failed (after retries), or it made too many: there is no answer. */
  failed: boolean;
  /** Why it failed. */
  error?: { kind: string; message: string; status?: number };
  /** The history was summarised before one of this turn's requests. */
  summarised: number;
  /** Tool calls of the turn whose result was an error (malformed arguments, unknown tools). */
  toolErrors: number;
}

/** A peer agent: one `prompt` per user message, its history kept in memory. */
export interface PeerAgent {
  prompt(text: string, signal: AbortSignal): Promise<PeerTurn>;
  /** The messages it would send now (system prompt first). */
  readonly messages: readonly ChatMessage[];
}

/** A peer agent as described above. */
export function peerAgent(options: PeerOptions): PeerAgent {
  const { llm, counter } = options;
  const tools = options.tools ?? [];
  const specs = tools.map((t) => t.spec);
  const keepTurns = options.keepTurns ?? 3;
  const maxOutputTokens = options.maxOutputTokens ?? Math.min(4096, llm.maxOutputTokens);
  const summarizer = modelSummarizer({ llm, counter, contextWindow: options.contextWindow });
  /** The history, turn by turn; a summary is a turn of its own at the front. */
  let turns: ChatMessage[][] = [];
  const flat = (): ChatMessage[] => [{ role: 'system', content: options.system }, ...turns.flat()];

  const summarise = async (signal: AbortSignal): Promise<boolean> => {
    if (options.summariseAt === null || turns.length <= keepTurns + 1) return false;
    if (counter.request(flat(), specs) < options.summariseAt * options.contextWindow) return false;
    const old = turns.slice(0, -(keepTurns + 1));
    const items: HistoryItem[] = old.flatMap((messages, turn) =>
      messages.map((message, i) => ({ seq: turn * 1000 + i, turn, message, tokens: counter.message(message) })),
    );
    const summary = summarizer
      ? await summarizer(items, signal)
      : await oneShotSummary(llm, items, maxOutputTokens, signal).catch(() => null);
    if (!summary) return false;
    turns = [
      [
        { role: 'user', content: `${PEER_SUMMARY_NOTE}\n${summary}` },
        { role: 'assistant', content: 'Understood.' },
      ],
      ...turns.slice(-(keepTurns + 1)),
    ];
    return true;
  };

  const request = async (signal: AbortSignal): Promise<LLMResponse> => {
    const messages = flat();
    // Where such agents put them, for a provider with explicit caching: after the system prompt, on the last message.
    const breakpoints: CacheBreakpoint[] = [{ message: 0 }, { message: messages.length - 1 }];
    const policy = { ...DEFAULT_RETRY, ...llm.retry };
    for (let attempt = 1; ; attempt++) {
      try {
        return await llm.complete({ messages, tools: specs, maxOutputTokens, cacheBreakpoints: breakpoints }, { signal, onText: () => {} });
      } catch (error) {
        const retryable = error instanceof LLMError && error.retryable && error.kind !== 'overflow';
        if (!retryable || attempt > policy.maxRetries || signal.aborted) throw error;
        await sleep(retryDelay(policy, attempt, error.retryAfterMs, Math.random()), signal);
      }
    }
  };

  return {
    get messages() {
      return flat();
    },
    async prompt(text, signal) {
      const turn: ChatMessage[] = [{ role: 'user', content: text }];
      turns.push(turn);
      let summarised = 0;
      let toolErrors = 0;
      for (let n = 0; n < (options.maxRequestsPerTurn ?? 20); n++) {
        if (await summarise(signal)) summarised++;
        let response: LLMResponse;
        try {
          response = await request(signal);
        } catch (error) {
          if (signal.aborted) throw error;
          const e = error as { kind?: unknown; message?: unknown; status?: unknown };
          return {
            text: '',
            failed: true,
            summarised,
            toolErrors,
            error: {
              kind: typeof e.kind === 'string' ? e.kind : 'error',
              message: String(e.message ?? error),
              ...(typeof e.status === 'number' ? { status: e.status } : {}),
            },
          };
        }
        const message = response.message;
        turn.push(message);
        if (!message.tool_calls?.length) return { text: message.content ?? '', failed: false, summarised, toolErrors };
        for (const call of message.tool_calls) {
          const result = await runTool(tools, call.function, signal, turns.length);
          if (result.isError) toolErrors++;
          turn.push({ role: 'tool', tool_call_id: call.id, content: result.content });
        }
      }
      return {
        text: '',
        failed: true,
        summarised,
        toolErrors,
        error: { kind: 'requests', message: `the turn made ${options.maxRequestsPerTurn ?? 20} requests without an answer` },
      };
    },
  };
}

/** A tool call run as a plain agent loop runs it: an error result for anything wrong. */
async function runTool(
  tools: readonly Tool[],
  call: { name: string; arguments: string },
  signal: AbortSignal,
  turn: number,
): Promise<{ content: string; isError: boolean }> {
  const failed = (content: string) => ({ content, isError: true });
  const tool = tools.find((t) => t.name === call.name);
  if (!tool)
    return failed(`Error: unknown tool ${JSON.stringify(call.name)}; the tools are ${tools.map((t) => t.name).join(', ') || 'none'}.`);
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    return failed(`Error: the arguments of ${call.name} are not valid JSON.`);
  }
  const parsed = tool.parameters.safeParse(args);
  if (!parsed.success) return failed(`Error: invalid arguments for ${call.name}: ${parsed.error.issues[0]?.message ?? 'invalid'}.`);
  try {
    const output = await tool.execute(parsed.data, { signal, session: { id: 'peer', dir: '', workingMemoryDir: '' }, turn, request: 0 });
    return typeof output === 'string' ? { content: output, isError: false } : { content: output.content, isError: output.isError === true };
  } catch (error) {
    return failed(`Error: ${(error as Error).message}`);
  }
}

/** A model without `summarize`: one request with the transcript. */
async function oneShotSummary(llm: LLM, items: HistoryItem[], maxOutputTokens: number, signal: AbortSignal): Promise<string | null> {
  const transcript = items.map((i) => `${i.message.role}: ${i.message.content ?? ''}`).join('\n');
  const response = await llm.complete(
    {
      messages: [
        { role: 'system', content: 'Summarise this conversation for the assistant that continues it: every name, number and decision.' },
        { role: 'user', content: transcript },
      ],
      tools: [],
      maxOutputTokens,
    },
    { signal, onText: () => {} },
  );
  return response.message.content?.trim() || null;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => (clearTimeout(timer), resolve());
    // The run's signal outlives many waits: each takes its listener away when it ends.
    const timer = setTimeout(() => (signal.removeEventListener('abort', stop), resolve()), ms);
    signal.addEventListener('abort', stop, { once: true });
  });
}
