/**
 * The llm actor: one streaming request to the model. Deltas go out as message_delta
 * events; the finished message is appended (and synced) before message_end. On abort
 * the text streamed so far is kept as an assistant message marked `stop: "aborted"`;
 * a half-streamed tool call is dropped, never written.
 */
import type { LlmInput, LlmOutput } from '../../machines/turnMachine.js';
import type { SessionEvent } from '../events.js';
import { FailedRequest, LLMError, type LLM } from '../llm/llm.js';
import { toTurnError } from '../../machines/turnErrors.js';
import { streamRedactor, type Redact } from '../secrets/redact.js';
import { ChatMessageSchema, type AssistantMessage, type ToolCall } from '../history/messages.js';
import { boundAnswer, boundResponse } from '../llm/captureBounds.js';
import { boundToolArguments } from '../tools/toolArguments.js';
import { ResponseSaves } from '../tools/responseSaves.js';
import { boundCallId } from '../llm/toolCallIds.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import type { TokenCounter } from '../tokens/tokens.js';
import { yieldIfBusy } from '../runtime/fairYield.js';

export interface LlmRequestDeps {
  llm: LLM;
  record: SessionRecord;
  counter: TokenCounter;
  emit(event: SessionEvent): void;
  /** Stores a call's oversized arguments whole; returns where (see toolArguments.ts). */
  saveArguments(call: ToolCall, turn: number): Promise<string>;
  /** Stores an answer over the cap whole; returns where (see captureBounds.ts). */
  saveAnswer?(text: string, turn: number, request: number): Promise<string>;
  /** A draw in [0, 1) for a failure's retry jitter (default Math.random). */
  random?: () => number;
  /** The session's redactor: deltas go out through a window, so a key split over deltas is masked too. */
  redact?: Redact;
}

export async function runLlmRequest(input: LlmInput, signal: AbortSignal, deps: LlmRequestDeps): Promise<LlmOutput> {
  // Sent in a turn of the loop of its own when the loop has been busy: making a long prompt's body is milliseconds.
  await yieldIfBusy();
  // Aborted meanwhile: nothing is sent (a listener added now would never hear of it).
  if (signal.aborted) throw new FailedRequest(new LLMError('aborted', 'the request was aborted'), (deps.random ?? Math.random)());
  const { record, counter } = deps;
  const base = { turn: input.turn, request: input.request };
  let streamed = '';
  let settled = false;
  const saveAnswer = async (text: string): Promise<string> =>
    deps.saveAnswer ? deps.saveAnswer(text, input.turn, input.request) : '(nowhere: no store given)';
  const window = deps.redact ? streamRedactor(deps.redact) : null;
  const release = (shown: string): void => {
    if (shown) deps.emit({ type: 'message_delta', ...base, delta: shown });
  };
  const flush = (): void => release(window?.flush() ?? '');

  // On abort the text streamed so far is kept; saving the turn waits for this append (SessionRecord.sync).
  const keepStreamed = (): void => {
    if (settled) return;
    settled = true;
    flush();
    if (!streamed) return;
    const text = streamed;
    const kept = (async () => {
      const message: AssistantMessage = { role: 'assistant', content: await boundAnswer(text, saveAnswer) };
      const entry = await record.appendMessage(input.turn, message, counter.message(message), { sync: true, stop: 'aborted' });
      deps.emit({ type: 'message_end', ...base, seq: entry.seq, tokens: entry.tokens, message, stop: 'aborted' });
    })();
    record.track(kept);
    kept.catch((error: unknown) => deps.emit({ type: 'error', ...base, error: toTurnError(error, 'storage'), fatal: false }));
  };
  signal.addEventListener('abort', keepStreamed, { once: true });

  try {
    const response = await deps.llm.complete(
      {
        messages: input.prompt.messages,
        tools: input.prompt.tools,
        maxOutputTokens: input.maxOutputTokens,
        cacheBreakpoints: input.prompt.cacheBreakpoints,
        promptTokens: input.prompt.tokens.total,
      },
      {
        signal,
        onText: (delta) => {
          if (settled || !delta) return;
          streamed += delta;
          release(window ? window.push(delta) : delta);
        },
      },
    );
    if (settled) throw new LLMError('aborted', 'the request was aborted');
    flush();
    // Names and text first: a refused call is saved whole with its arguments, then they are bounded;
    // both draw on the response's one save budget.
    settled = true;
    const saves = new ResponseSaves((call) => deps.saveArguments(call, input.turn));
    const bounded = await boundResponse(checkedMessage(response.message), saves, saveAnswer);
    const message = await boundToolArguments(bounded, saves);
    const entry = await record.appendMessage(input.turn, message, counter.message(message), { sync: true });
    deps.emit({ type: 'message_end', ...base, seq: entry.seq, tokens: entry.tokens, message });
    const warning = finishWarning(response.finishReason);
    if (warning) deps.emit({ type: 'error', ...base, error: { kind: 'bad_response', message: warning, retryable: false }, fatal: false });
    return { history: record.history, message, usage: response.usage, finishReason: response.finishReason };
  } catch (error) {
    if (!settled) flush();
    throw new FailedRequest(error, (deps.random ?? Math.random)());
  } finally {
    settled = true;
    signal.removeEventListener('abort', keepStreamed);
  }
}

/** What we store must be a valid assistant message; tool calls get unique ids, bounded (toolCallIds.ts). */
function checkedMessage(message: AssistantMessage): AssistantMessage {
  const seen = new Set<string>();
  const withIds = Array.isArray(message?.tool_calls)
    ? {
        ...message,
        tool_calls: message.tool_calls.map((call, i) => {
          let id = boundCallId(typeof call?.id === 'string' && call.id ? call.id : `call_${i}`);
          while (seen.has(id)) id = boundCallId(`${id}_${i}`);
          seen.add(id);
          return { ...call, id };
        }),
      }
    : message;
  const parsed = ChatMessageSchema.safeParse(withIds);
  if (!parsed.success || parsed.data.role !== 'assistant') {
    throw new LLMError('bad_response', `the model's response is not a valid assistant message`);
  }
  const content = parsed.data.content ?? null;
  const calls = parsed.data.tool_calls;
  if (!calls?.length) {
    if (!content) throw new LLMError('bad_response', 'the model returned an empty response (no text and no tool calls)');
    return { role: 'assistant', content };
  }
  return { role: 'assistant', content, tool_calls: calls };
}

/** The answer is kept whatever the finish reason; an unusual one is reported. */
function finishWarning(reason: string): string | null {
  switch (reason) {
    case 'stop':
    case 'tool_calls':
    case 'function_call':
      return null;
    case 'length':
      return 'the answer was cut at the output token limit (finish_reason "length"); it was kept as it is';
    case 'content_filter':
      return "the answer was cut by the provider's content filter; it was kept as it is";
    default:
      return `unknown finish reason ${JSON.stringify(reason).slice(0, 60)}; the answer was kept as it is`;
  }
}
