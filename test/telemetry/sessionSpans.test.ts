/**
 * A Session reporting to the OpenTelemetry SDK's in-memory exporters: the span tree of a turn
 * that calls a tool, writes its memory and compacts its history (a summary under the
 * compaction); the attribute names and values of the pinned conventions (v1.41, checked
 * against @opentelemetry/semantic-conventions 1.41.1's own constants); the metrics; and no
 * message text, argument, result or key in anything the exporters receive.
 */
import {
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_TOKEN_TYPE,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_TOKEN_TYPE_VALUE_INPUT,
  GEN_AI_TOKEN_TYPE_VALUE_OUTPUT,
  METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
  METRIC_GEN_AI_CLIENT_TOKEN_USAGE,
} from '@opentelemetry/semantic-conventions/incubating';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LLMRequest, LLMResponse } from '../../src/llm/llm.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { defineTool } from '../../src/tools/tool.js';
import { newSession } from '../helpers.js';
import { otelCapture, spanStrings, spanTree, type OtelCapture } from './otelTesting.js';

const SECRET = 'sk-live-4f9a1c2e8b7d6a5f3e2d1c0b';
/** Words that appear only in text: the prompts, the answers, the tool's arguments and result, the memory. */
const TEXT = ['Tangerine', 'Zeppelin', 'Marmalade', 'Quokka', 'Obsidian', 'Halibut'];

let capture: OtelCapture | null = null;
afterEach(async () => {
  await capture?.close();
  capture = null;
});

function modelWithSummaries() {
  const summaries: LLMRequest[] = [];
  const llm = scriptedModel(
    [
      {
        text: 'Noted: the Tangerine plan. ' + 'Each step of the plan is written down here. '.repeat(40),
        usage: { promptTokens: 900, completionTokens: 12 },
      },
      {
        toolCalls: [
          { name: 'lookup', arguments: { query: 'Zeppelin timetable' }, id: 'call_lookup' },
          { name: 'write', arguments: { path: 'overview.md', content: '# Task\nMarmalade budget, Quokka team.\n' }, id: 'call_write' },
          { name: 'compact_history', arguments: { target: 'all', strategy: 'summarize', keep_recent: 0 }, id: 'call_compact' },
        ],
        usage: { promptTokens: 1500, completionTokens: 80, cachedPromptTokens: 1024 },
      },
      { text: 'Done: Obsidian route booked.', usage: { promptTokens: 700, completionTokens: 9, cachedPromptTokens: 512 } },
    ],
    { model: 'gpt-test', contextWindow: 32_000, maxOutputTokens: 1_000 },
  );
  const summarize = async (request: LLMRequest): Promise<LLMResponse> => {
    summaries.push(request);
    return {
      message: { role: 'assistant', content: '## Goal\nTangerine plan\n## Decisions\nnone\n## Progress\nstarted\n' },
      usage: { promptTokens: 300, completionTokens: 20 },
      finishReason: 'stop',
    };
  };
  return { llm: Object.assign(llm, { summarize, secrets: [SECRET] }), summaries };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up.',
  parameters: z.object({ query: z.string() }),
  execute: async () => ({ content: `Halibut schedule; key ${SECRET}` }),
});

async function tracedTurn() {
  capture = otelCapture();
  const { llm, summaries } = modelWithSummaries();
  const session = await newSession({
    llm,
    tools: [lookup],
    // compactHistoryFloor 0: the one turn uses a few % of the window, and its compaction is what is traced.
    settings: { reminder: { maxRounds: 1, minRounds: 0 }, compactHistoryFloor: 0 },
    telemetry: { tracerProvider: capture.tracerProvider, meterProvider: capture.meterProvider },
  });
  await session.prompt(`Remember the Tangerine plan (key ${SECRET}).`);
  const result = await session.prompt('Book the Zeppelin, then tidy up.');
  await session.close();
  return { session, result, summaries, spans: capture.spans(), points: await capture.points() };
}

describe('a session with OpenTelemetry', () => {
  it('reports a turn as a span tree: model calls, tools, the memory write, the compaction with its summary, the reminder', async () => {
    const { result, summaries, spans } = await tracedTurn();
    expect(result.status).toBe('done');
    expect(summaries.length).toBe(1);
    const turn2 = spans.find((s) => s.name === 'invoke_agent workmem' && s.attributes['workmem.turn'] === 2)!;
    const ofTurn2 = (s: (typeof spans)[number]): boolean => {
      for (let p = s.parentSpanContext?.spanId; p; p = spans.find((x) => x.spanContext().spanId === p)?.parentSpanContext?.spanId)
        if (p === turn2.spanContext().spanId) return true;
      return s === turn2;
    };
    expect(spanTree(spans.filter(ofTurn2))).toBe(
      [
        'invoke_agent workmem',
        '  read_memory',
        '  reminder',
        '  chat gpt-test',
        '  execute_tool lookup',
        '  execute_tool write',
        '    upsert_memory',
        '  execute_tool compact_history',
        '    compaction llm',
        '      chat gpt-test',
        '  read_memory',
        '  chat gpt-test',
      ].join('\n'),
    );
    // Every span of the session belongs to a turn: two turns, two roots.
    expect(spans.filter((s) => !s.parentSpanContext).map((s) => s.name)).toEqual(['invoke_agent workmem', 'invoke_agent workmem']);
  });

  it('names attributes and values as the pinned conventions (v1.41) do, and adds workmem’s own', async () => {
    const { session, spans } = await tracedTurn();
    const turn = spans.find((s) => s.name === 'invoke_agent workmem' && s.attributes['workmem.turn'] === 2)!;
    expect(turn.kind).toBe(SpanKind.INTERNAL);
    expect(turn.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
      [ATTR_GEN_AI_AGENT_NAME]: 'workmem',
      [ATTR_GEN_AI_CONVERSATION_ID]: session.id,
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-test',
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 2200,
      [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: 1536,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 89,
      'workmem.turn.status': 'done',
      'workmem.turn.requests': 2,
      // The turn's write made the memory effective: the session moved to phase 2 during it.
      'workmem.history_mode': 'phase2',
    });

    const chats = spans.filter((s) => s.name === 'chat gpt-test');
    const first = chats.find(
      (s) =>
        s.attributes['workmem.turn'] === undefined &&
        s.attributes['workmem.request'] === 1 &&
        s.attributes[ATTR_GEN_AI_USAGE_INPUT_TOKENS] === 1500,
    )!;
    expect(first.kind).toBe(SpanKind.CLIENT);
    expect(first.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [ATTR_GEN_AI_PROVIDER_NAME]: '_OTHER',
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-test',
      [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: 1000,
      [ATTR_GEN_AI_CONVERSATION_ID]: session.id,
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 1500,
      [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: 1024,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 80,
      [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['tool_calls'],
      'workmem.token.reason': 'turn',
      'workmem.context.window': 32_000,
    });
    expect(first.attributes['workmem.prompt.tokens']).toBeGreaterThan(0);
    const summary = chats.find((s) => s.attributes['workmem.token.reason'] === 'summary')!;
    expect(summary.attributes).toMatchObject({ [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 300, [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['stop'] });

    const tool = spans.find((s) => s.name === 'execute_tool lookup')!;
    expect(tool.attributes).toEqual({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [ATTR_GEN_AI_TOOL_NAME]: 'lookup',
      [ATTR_GEN_AI_TOOL_CALL_ID]: 'call_lookup',
      [ATTR_GEN_AI_TOOL_TYPE]: 'function',
    });
    // Memory operations as semantic-conventions-genai v0.1.0 names them (no JS constants yet).
    expect(spans.find((s) => s.name === 'upsert_memory')!.attributes).toEqual({
      'gen_ai.operation.name': 'upsert_memory',
      'gen_ai.memory.store.id': `${session.id}/working-memory`,
      'gen_ai.memory.record.id': 'overview.md',
      'gen_ai.memory.record.count': 1,
    });
    const compaction = spans.find((s) => s.name === 'compaction llm')!;
    expect(compaction.attributes['workmem.compaction.reason']).toBe('llm');
    expect(compaction.attributes['workmem.compaction.replaced']).toBeGreaterThan(0);
    expect(compaction.attributes['workmem.compaction.tokens_after']).toBeLessThan(
      compaction.attributes['workmem.compaction.tokens_before'] as number,
    );
    expect(spans.find((s) => s.name === 'reminder')!.attributes).toMatchObject({
      'workmem.reminder.level': 'gentle',
      'workmem.reminder.reason': 'rounds',
    });
    expect(spans.every((s) => s.status.code !== SpanStatusCode.ERROR)).toBe(true);
  });

  it('keeps every prompt, answer, argument, result, memory content and key out of what it exports', async () => {
    const { spans, points } = await tracedTurn();
    const exported = [...spanStrings(spans), ...points.flatMap((p) => [p.name, ...Object.entries(p.attributes).flat().map(String)])].join(
      '\n',
    );
    expect(exported).not.toContain(SECRET);
    for (const word of TEXT) expect(exported).not.toContain(word);
  });

  it('records the conventions’ client metrics and workmem’s own, with their units', async () => {
    const { points } = await tracedTurn();
    const sum = (name: string, attributes: Record<string, unknown> = {}) =>
      points
        .filter((p) => p.name === name && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
        .reduce((n, p) => n + p.value, 0);
    const unit = (name: string) => points.find((p) => p.name === name)?.unit;
    expect(unit(METRIC_GEN_AI_CLIENT_TOKEN_USAGE)).toBe('{token}');
    expect(unit(METRIC_GEN_AI_CLIENT_OPERATION_DURATION)).toBe('s');
    // Three turn requests and one summary: 900 + 1500 + 700 + 300 in, 12 + 80 + 9 + 20 out.
    expect(sum(METRIC_GEN_AI_CLIENT_TOKEN_USAGE, { [ATTR_GEN_AI_TOKEN_TYPE]: GEN_AI_TOKEN_TYPE_VALUE_INPUT })).toBe(3400);
    expect(sum(METRIC_GEN_AI_CLIENT_TOKEN_USAGE, { [ATTR_GEN_AI_TOKEN_TYPE]: GEN_AI_TOKEN_TYPE_VALUE_OUTPUT })).toBe(121);
    expect(points.find((p) => p.name === METRIC_GEN_AI_CLIENT_OPERATION_DURATION)?.count).toBe(4);
    expect(sum('workmem.tokens', { 'workmem.token.kind': 'input', 'workmem.token.reason': 'turn' })).toBe(3100);
    expect(sum('workmem.tokens', { 'workmem.token.kind': 'cached', 'workmem.token.reason': 'turn' })).toBe(1536);
    expect(sum('workmem.tokens', { 'workmem.token.kind': 'output', 'workmem.token.reason': 'summary' })).toBe(20);
    expect(sum('workmem.requests')).toBe(3);
    expect(unit('workmem.requests')).toBe('{request}');
    expect(sum('workmem.compactions', { 'workmem.compaction.reason': 'llm' })).toBe(1);
    expect(sum('workmem.memory.writes', { 'workmem.memory.file': 'overview' })).toBe(1);
    expect(sum('workmem.reminders')).toBe(1);
    expect(sum('workmem.reminders.heeded')).toBe(1);
    const utilization = points.filter((p) => p.name === 'workmem.context.utilization');
    expect(utilization[0]?.unit).toBe('1');
    expect(utilization.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(3);
    const overhead = points.filter((p) => p.name === 'workmem.request.overhead');
    expect(overhead[0]?.unit).toBe('s');
    expect(overhead.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(3);
  });
});
