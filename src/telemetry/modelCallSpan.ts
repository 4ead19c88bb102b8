/**
 * One model call: a `chat {model}` span (CLIENT) with the usage and finish reason the server
 * reported, `gen_ai.client.operation.duration` and `gen_ai.client.token.usage`, and
 * workmem's tokens by kind and reason.
 */
import { SpanKind, type Attributes, type Context, type Link, type Tracer } from '@opentelemetry/api';
import type { LLMResponse } from '../llm/llm.js';
import { ATTR, OPERATION, WM } from './conventions.js';
import type { Instruments } from './instruments.js';
import { fail, kindOf } from './spanKit.js';

export interface ModelCall {
  tracer: Tracer;
  instruments: Instruments;
  model: string;
  /** The provider and model, on the span and every measurement. */
  base: Attributes;
  parent: Context;
  links: { links?: Link[] };
  /** The span's attributes known before the call. */
  attributes: Attributes;
  /** `turn`, `summary` or `background`. */
  tokenReason: string;
}

export async function tracedModelCall(c: ModelCall, call: () => Promise<LLMResponse>): Promise<LLMResponse> {
  const started = performance.now();
  const span = c.tracer.startSpan(
    `${OPERATION.chat} ${c.model}`,
    { kind: SpanKind.CLIENT, attributes: c.attributes, ...c.links },
    c.parent,
  );
  const measured = { [ATTR.operation]: OPERATION.chat, ...c.base };
  const m = c.instruments;
  let response: LLMResponse;
  try {
    response = await call();
  } catch (error) {
    const kind = kindOf(error);
    fail(span, kind);
    m.operationDuration.record((performance.now() - started) / 1000, { ...measured, [ATTR.errorType]: kind });
    throw error;
  }
  const usage = response.usage;
  span.setAttribute(ATTR.finishReasons, [response.finishReason]);
  if (usage) {
    span.setAttributes({
      [ATTR.inputTokens]: usage.promptTokens,
      [ATTR.outputTokens]: usage.completionTokens,
      ...(usage.cachedPromptTokens !== undefined ? { [ATTR.cacheReadTokens]: usage.cachedPromptTokens } : {}),
    });
    m.tokenUsage.record(usage.promptTokens, { ...measured, [ATTR.tokenType]: 'input' });
    m.tokenUsage.record(usage.completionTokens, { ...measured, [ATTR.tokenType]: 'output' });
    const by = (kind: string) => ({ [WM.tokenKind]: kind, [WM.tokenReason]: c.tokenReason, [ATTR.requestModel]: c.model });
    m.tokens.add(usage.promptTokens, by('input'));
    m.tokens.add(usage.cachedPromptTokens ?? 0, by('cached'));
    m.tokens.add(usage.completionTokens, by('output'));
  }
  span.end();
  m.operationDuration.record((performance.now() - started) / 1000, measured);
  return response;
}
