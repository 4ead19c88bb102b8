/**
 * The model as every arm calls it, with each call recorded: the turn it served, whether it
 * answered or summarised (and whether in the background), the server's usage (input, cached and cache-written input, output;
 * counted by us, and marked so, only when the server reported none), what the output went
 * to, whether it failed, and how long it took. What the report says about tokens, cache,
 * bills and failed requests comes from here.
 */
import type { LLM, LLMRequest, LLMResponse, SummarizeOptions } from '../llm/llm.js';
import type { TokenCounter } from '../tokens/tokens.js';

/**
 * What output tokens went to: `answer` (text), `memory` (write and edit calls of working
 * memory), `tool` (other tool calls), `summary` (a summarising request). An extensible
 * tally: another reason (a background summary) is one more key.
 */
export type OutputKind = 'answer' | 'memory' | 'tool' | 'summary' | (string & {});

/** Output tokens by what they went to. */
export type OutputByKind = Partial<Record<OutputKind, number>>;

/** One request to the model, as it went. */
export interface CallRecord {
  /** The conversation's turn (0-based) the request served. */
  turn: number;
  /** An answer, a summary a turn waited for, or one prepared in the background (docs/memory.md#background-summaries). */
  kind: 'answer' | 'summary' | 'background';
  input: number;
  cached: number;
  /** Of input, written to the provider's cache (0 where it reports none). */
  cacheWrite: number;
  output: number;
  /** The output by what it went to (the server's count shared out by ours of each part). */
  outputBy: OutputByKind;
  /** The server reported no usage: input and output are our count. */
  counted: boolean;
  /** The request failed (its error kind); a retry is a request of its own. */
  failed?: string;
  ms: number;
}

/** A model whose calls are recorded; `turn` says which turn the next calls serve. */
export interface MeteredModel {
  readonly llm: LLM;
  readonly calls: CallRecord[];
  turn: number;
}

/** A tool call that writes working memory: workmem's write and edit, on a path under working-memory/. */
const MEMORY_TOOLS = new Set(['write', 'edit']);

/** Wraps `llm` so that every request is recorded. */
export function meteredModel(llm: LLM, counter: TokenCounter): MeteredModel {
  const meter: MeteredModel = {
    calls: [],
    turn: 0,
    llm: {
      model: llm.model,
      contextWindow: llm.contextWindow,
      maxOutputTokens: llm.maxOutputTokens,
      ...(llm.retry ? { retry: llm.retry } : {}),
      ...(llm.secrets ? { secrets: llm.secrets } : {}),
      ...(llm.caching ? { caching: llm.caching } : {}),
      complete: (request, options) => record('answer', request, () => llm.complete(request, options)),
      ...(llm.summarize
        ? {
            summarize: (request: LLMRequest, options: SummarizeOptions) =>
              record(options.background ? 'background' : 'summary', request, () => llm.summarize!(request, options)),
          }
        : {}),
    },
  };
  const record = async (kind: CallRecord['kind'], request: LLMRequest, call: () => Promise<LLMResponse>): Promise<LLMResponse> => {
    const started = performance.now();
    const turn = meter.turn;
    try {
      const response = await call();
      const usage = response.usage;
      const parts = outputParts(kind, response, counter);
      const ours = Object.values(parts).reduce<number>((n, v) => n + (v ?? 0), 0);
      const output = usage?.completionTokens ?? ours;
      push({
        turn,
        kind,
        input: usage?.promptTokens ?? counter.request(request.messages, request.tools),
        cached: usage?.cachedPromptTokens ?? 0,
        cacheWrite: usage?.cacheWriteTokens ?? 0,
        output,
        outputBy: shareOut(output, parts, kind),
        counted: !usage,
        ms: performance.now() - started,
      });
      return response;
    } catch (error) {
      push({
        turn,
        kind,
        input: 0,
        cached: 0,
        cacheWrite: 0,
        output: 0,
        outputBy: {},
        counted: false,
        failed: kindOf(error),
        ms: performance.now() - started,
      });
      throw error;
    }
  };
  const push = (call: CallRecord): void => void meter.calls.push(call);
  return meter;
}

/** Our count of each part of a response's output. */
function outputParts(kind: CallRecord['kind'], response: LLMResponse, counter: TokenCounter): Record<string, number> {
  const text = counter.text(response.message.content ?? '');
  if (kind !== 'answer') return { [kind]: text };
  const parts: Record<string, number> = { answer: text };
  for (const call of response.message.tool_calls ?? []) {
    const tokens = counter.text(call.function.name) + counter.text(call.function.arguments);
    const key = MEMORY_TOOLS.has(call.function.name) && /working-memory\//.test(call.function.arguments) ? 'memory' : 'tool';
    parts[key] = (parts[key] ?? 0) + tokens;
  }
  return parts;
}

/** `total` shared out in proportion to `parts`, whole tokens, adding up; all to `fallback` when the parts are empty. */
function shareOut(total: number, parts: Record<string, number>, fallback: OutputKind): OutputByKind {
  const entries = Object.entries(parts).filter(([, n]) => n > 0);
  const sum = entries.reduce((n, [, v]) => n + v, 0);
  if (!sum) return total ? { [fallback]: total } : {};
  const out: OutputByKind = {};
  let given = 0;
  entries.forEach(([key, n], i) => {
    const share = i === entries.length - 1 ? total - given : Math.round((total * n) / sum);
    out[key] = share;
    given += share;
  });
  return out;
}

/** Two tallies added, key by key. */
export function addOutput(a: OutputByKind, b: OutputByKind): OutputByKind {
  const out: OutputByKind = { ...a };
  for (const [key, n] of Object.entries(b)) out[key] = (out[key] ?? 0) + (n ?? 0);
  return out;
}

function kindOf(error: unknown): string {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? kind : 'error';
}
