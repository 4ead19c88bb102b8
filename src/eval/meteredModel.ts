/**
 * The model as every arm calls it, with each call recorded: the turn it served, whether it
 * answered or summarised (and whether in the background), the server's usage (input, cached, output; counted by us, and
 * marked so, only when the server reported none), whether it failed, and how long it took.
 * What the report says about tokens, cache, bills and failed requests comes from here.
 */
import type { LLM, LLMRequest, LLMResponse, SummarizeOptions } from '../llm/llm.js';
import type { TokenCounter } from '../tokens/tokens.js';

/** One request to the model, as it went. */
export interface CallRecord {
  /** The conversation's turn (0-based) the request served. */
  turn: number;
  /** An answer, a summary a turn waited for, or one prepared in the background (docs/memory.md#background-summaries). */
  kind: 'answer' | 'summary' | 'background';
  input: number;
  cached: number;
  output: number;
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
      const output = response.message.content ?? '';
      const args = (response.message.tool_calls ?? []).map((c) => c.function.name + c.function.arguments).join('');
      push({
        turn,
        kind,
        input: usage?.promptTokens ?? counter.request(request.messages, request.tools),
        cached: usage?.cachedPromptTokens ?? 0,
        output: usage?.completionTokens ?? counter.text(output + args),
        counted: !usage,
        ms: performance.now() - started,
      });
      return response;
    } catch (error) {
      push({ turn, kind, input: 0, cached: 0, output: 0, counted: false, failed: kindOf(error), ms: performance.now() - started });
      throw error;
    }
  };
  const push = (call: CallRecord): void => void meter.calls.push(call);
  return meter;
}

function kindOf(error: unknown): string {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? kind : 'error';
}
