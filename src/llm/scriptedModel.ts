/**
 * An in-process stand-in for an LLM: replies come from a script (a list, or a function
 * of the request). It streams text in chunks, can be slow and abortable, can fail on
 * demand, and records every request it receives. For tests and examples; it never
 * pretends to be a real model.
 */
import { LLMError, type LLM, type LLMCallOptions, type LLMRequest, type LLMResponse, type LLMUsage } from './llm.js';
import type { AssistantMessage } from '../history/messages.js';

export interface ScriptedReply {
  text?: string;
  toolCalls?: { name: string; arguments: string | Record<string, unknown>; id?: string }[];
  /** Thrown instead of answering. */
  error?: LLMError;
  usage?: LLMUsage;
  /** Deltas the text is streamed in (default 1). */
  chunks?: number;
  /** Pause before each delta, abortable (default 0). */
  delayMs?: number;
}

export type ScriptStep = ScriptedReply | ((request: LLMRequest, index: number) => ScriptedReply | Promise<ScriptedReply>);

export interface ScriptedModelOptions {
  model?: string;
  contextWindow?: number;
  maxOutputTokens?: number;
}

export interface ScriptedModel extends LLM {
  readonly requests: LLMRequest[];
}

/** An in-process model that answers from a script: for tests and for trying workmem without an API key. */
export function scriptedModel(
  script: readonly ScriptStep[] | ((request: LLMRequest, index: number) => ScriptedReply | Promise<ScriptedReply>),
  options: ScriptedModelOptions = {},
): ScriptedModel {
  const requests: LLMRequest[] = [];
  const next = async (request: LLMRequest, index: number): Promise<ScriptedReply> => {
    if (typeof script === 'function') return script(request, index);
    const step = script[index];
    if (step === undefined) throw new LLMError('bad_request', `scripted model: the script has no reply for request ${index + 1}`);
    return typeof step === 'function' ? step(request, index) : step;
  };
  return {
    model: options.model ?? 'scripted',
    contextWindow: options.contextWindow ?? 128_000,
    maxOutputTokens: options.maxOutputTokens ?? 4_096,
    requests,
    async complete(request: LLMRequest, call: LLMCallOptions): Promise<LLMResponse> {
      const index = requests.length;
      requests.push(request);
      const reply = await next(request, index);
      if (call.signal.aborted) throw new LLMError('aborted', 'the request was aborted');
      if (reply.error) throw reply.error;
      const text = reply.text ?? '';
      const chunks = Math.max(1, reply.chunks ?? 1);
      const size = Math.ceil(text.length / chunks) || 1;
      for (let i = 0; i < text.length; i += size) {
        if (reply.delayMs) await sleep(reply.delayMs, call.signal);
        call.onText(text.slice(i, i + size));
      }
      if (!text && reply.delayMs) await sleep(reply.delayMs, call.signal);
      const message: AssistantMessage = { role: 'assistant', content: text || null };
      if (reply.toolCalls?.length) {
        message.tool_calls = reply.toolCalls.map((c, i) => ({
          id: c.id ?? `call_${index}_${i}`,
          type: 'function' as const,
          function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
        }));
      }
      return { message, usage: reply.usage ?? null, finishReason: message.tool_calls ? 'tool_calls' : 'stop' };
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new LLMError('aborted', 'the request was aborted'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new LLMError('aborted', 'the request was aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
