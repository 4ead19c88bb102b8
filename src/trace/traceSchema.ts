/**
 * What the visualizer accepts on /ingest: the messages of a LiveLink and the trace
 * records they carry (traceRecorder.ts), each event of the session vocabulary
 * (events.ts) by its fields. Anything else is dropped before a page sees it; parsing
 * also strips fields the vocabulary does not have.
 */
import { z } from 'zod';
import { SESSION_ID } from '../storage/sessionPaths.js';

const count = z.number().int().nonnegative();
const turnNo = count;
const text = z.string();
const mode = z.enum(['phase1', 'phase2', 'hybrid']);
const compactionReason = z.enum(['llm', 'fallback', 'overflow', 'auto', 'manual', 'horizon', 'background']);
const usage = z.object({ input: count, cached: count, output: count });
const turnError = z.object({
  kind: z.enum([
    'overflow',
    'rate_limit',
    'server',
    'network',
    'timeout',
    'aborted',
    'auth',
    'bad_request',
    'bad_response',
    'tool',
    'memory',
    'storage',
    'window',
    'internal',
  ]),
  message: text,
  status: z.number().int().optional(),
  retryAfterMs: z.number().nonnegative().optional(),
  retryable: z.boolean(),
});
const at = { turn: turnNo, request: count, ts: z.number() };
/** prompt_built's tokens (and a request record's), with the cacheable prefix of issue 16 where there is one. */
const promptTokens = z.object({
  system: z.number(),
  memory: z.number(),
  history: z.number(),
  tail: z.number(),
  counted: z.number(),
  calibration: z.number(),
  total: z.number(),
  window: z.number().positive(),
  percent: z.number(),
  cacheable: z.number().optional(),
});
const toolCall = z.object({ id: text, type: z.literal('function'), function: z.object({ name: text, arguments: text }) });
const chatMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: text }),
  z.object({ role: z.literal('user'), content: text }),
  z.object({ role: z.literal('assistant'), content: text.nullable(), tool_calls: z.array(toolCall).optional() }),
  z.object({ role: z.literal('tool'), tool_call_id: text, content: text }),
]);

export const tracedEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('turn_start'), ts: z.number(), turn: turnNo, promptId: text, text }),
  z.object({ type: z.literal('memory_loaded'), ...at, version: count, bytes: count, detailFiles: count }),
  z.object({
    type: z.literal('reminder'),
    ...at,
    level: z.enum(['gentle', 'firm', 'urgent']),
    reason: z.enum(['rounds', 'tokens', 'compaction', 'leaving']),
    rounds: count,
    tokensPercent: z.number(),
    leaving: z.object({ from: count, to: count }).optional(),
  }),
  z.object({
    type: z.literal('prompt_built'),
    ...at,
    mode,
    messages: count,
    range: z.tuple([count, count]),
    pinned: z.array(count).optional(),
    tokens: promptTokens,
  }),
  z.object({
    type: z.literal('message_end'),
    ...at,
    seq: count,
    tokens: count,
    message: z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']) }),
    stop: z.literal('aborted').optional(),
    pinned: z.literal(true).optional(),
  }),
  z.object({ type: z.literal('tool_start'), ...at, callId: text, name: text, arguments: text }),
  z.object({ type: z.literal('tool_end'), ...at, callId: text, name: text, isError: z.boolean(), content: text, ms: z.number() }),
  z.object({
    type: z.literal('memory_updated'),
    ...at,
    path: text,
    bytes: count,
    health: z.object({ differsFromTemplate: z.boolean(), contentChars: count }),
    warning: text.optional(),
  }),
  z.object({ type: z.literal('mode_changed'), ts: z.number(), from: mode, to: mode, pinned: z.boolean() }),
  z.object({ type: z.literal('compaction_start'), ...at, reason: compactionReason, tokensBefore: count }),
  z.object({
    type: z.literal('compaction_end'),
    ...at,
    reason: compactionReason,
    tokensBefore: count,
    tokensAfter: count,
    replaced: count,
    files: z.array(text),
  }),
  z.object({ type: z.literal('background_start'), ts: z.number(), turn: turnNo, turns: text, messages: count, tokens: count }),
  z.object({
    type: z.literal('background_end'),
    ts: z.number(),
    turn: turnNo,
    status: z.enum(['ready', 'failed', 'superseded']),
    ms: z.number().nonnegative().optional(),
    usage: usage.optional(),
    error: turnError.optional(),
  }),
  z.object({ type: z.literal('background_dropped'), ts: z.number(), turn: turnNo, turns: text }),
  z.object({ type: z.literal('retry'), ...at, attempt: count, delayMs: z.number().nonnegative(), error: turnError }),
  z.object({
    type: z.literal('turn_end'),
    ts: z.number(),
    turn: turnNo,
    promptId: text,
    status: z.enum(['done', 'failed', 'aborted']),
    text,
    requests: count,
    error: turnError.optional(),
    usage: usage.optional(),
  }),
  z.object({ type: z.literal('prompt_dropped'), ts: z.number(), promptId: text, text }),
  z.object({
    type: z.literal('error'),
    ts: z.number(),
    turn: turnNo.optional(),
    request: count.optional(),
    error: turnError,
    fatal: z.boolean(),
  }),
]);

/** A machine's state value: a state name, or nested names for compound and parallel states. */
type StateValue = string | { [key: string]: StateValue };
const stateValue: z.ZodType<StateValue> = z.lazy(() => z.union([text, z.record(text, stateValue)]));

export const traceRecordSchema = z.discriminatedUnion('k', [
  z.object({ k: z.literal('header'), format: count, sessionId: z.string().regex(SESSION_ID), ts: z.number(), resumed: z.boolean() }),
  z.object({
    k: z.literal('step'),
    ts: z.number(),
    machine: text,
    event: text,
    transitions: z.array(text),
    from: z.array(text),
    to: z.array(text),
    value: stateValue.nullable(),
    turn: turnNo.nullable(),
    request: count.nullable(),
  }),
  z.object({ k: z.literal('event'), ts: z.number(), event: tracedEventSchema }),
  z.object({ k: z.literal('memory'), ts: z.number(), version: count, content: text, turn: turnNo.nullable() }),
  // What each request sent (sentMessages.ts).
  z.object({
    k: z.literal('system'),
    ts: z.number(),
    hash: text,
    content: text,
    detailIndexTokens: count.nullable(),
    memory: text.optional(),
  }),
  z.object({
    k: z.literal('message'),
    ts: z.number(),
    seq: count,
    turn: turnNo,
    tokens: count,
    message: chatMessage,
    pinned: z.literal(true).optional(),
  }),
  z.object({
    k: z.literal('request'),
    ts: z.number(),
    turn: turnNo,
    request: count,
    mode,
    system: text,
    seqs: z.array(z.tuple([count, count])),
    tail: text,
    tokens: promptTokens,
    reserved: count.nullable(),
  }),
  // What a host's loop sent with each call (hostMessages.ts).
  z.object({ k: z.literal('instructions'), ts: z.number(), hash: text, content: text }),
  z.object({
    k: z.literal('host'),
    ts: z.number(),
    turn: turnNo,
    instructions: text.nullable(),
    seqs: z.array(z.tuple([count, count])),
    sent: count,
  }),
]);

/** A LiveLink's messages: who it is, then its records. */
export const ingestMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('hello'), sessionId: z.string().regex(SESSION_ID) }),
  z.object({ type: z.literal('record'), sessionId: z.string().regex(SESSION_ID).optional(), record: traceRecordSchema }),
]);

export type IngestMessage = z.infer<typeof ingestMessageSchema>;
