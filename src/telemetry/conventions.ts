/**
 * The names workmem's telemetry uses: the OpenTelemetry GenAI semantic conventions of the
 * version pinned here (their status is Development, so names move between versions), and
 * workmem's own for what they do not define (compaction, reminders, the window).
 */

/**
 * Model, agent and tool spans, `gen_ai.usage.*` and the `gen_ai.client.*` metrics as in
 * semantic conventions v1.41 (the last release that carried GenAI, whose names dashboards
 * read); memory operations as in semantic-conventions-genai v0.1.0 (merged May 2026), which
 * defines no others of ours. That release renames the inference metrics; the conventions ask
 * an instrumentation not to change the names it emits by default, so these stay until a
 * stable version.
 */
export const SEMCONV_VERSION = '1.41.1';
export const SEMCONV_MEMORY_VERSION = 'genai-0.1.0';

export const ATTR = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  maxTokens: 'gen_ai.request.max_tokens',
  conversation: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  tokenType: 'gen_ai.token.type',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  memoryStore: 'gen_ai.memory.store.id',
  memoryRecord: 'gen_ai.memory.record.id',
  memoryRecordCount: 'gen_ai.memory.record.count',
  errorType: 'error.type',
} as const;

export const OPERATION = {
  chat: 'chat',
  invokeAgent: 'invoke_agent',
  executeTool: 'execute_tool',
  createMemory: 'create_memory',
  updateMemory: 'update_memory',
  upsertMemory: 'upsert_memory',
  searchMemory: 'search_memory',
  deleteMemory: 'delete_memory',
} as const;

export const METRIC = {
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
} as const;

/** workmem's own attributes and metrics: what the conventions leave to the instrumentation. */
export const WM = {
  turn: 'workmem.turn',
  request: 'workmem.request',
  historyMode: 'workmem.history_mode',
  status: 'workmem.turn.status',
  requests: 'workmem.turn.requests',
  memoryVersion: 'workmem.memory.version',
  memoryBytes: 'workmem.memory.bytes',
  promptTokens: 'workmem.prompt.tokens',
  window: 'workmem.context.window',
  windowShare: 'workmem.context.utilization',
  compactionReason: 'workmem.compaction.reason',
  tokensBefore: 'workmem.compaction.tokens_before',
  tokensAfter: 'workmem.compaction.tokens_after',
  replaced: 'workmem.compaction.replaced',
  reminderLevel: 'workmem.reminder.level',
  reminderReason: 'workmem.reminder.reason',
  rounds: 'workmem.reminder.rounds',
  tokenKind: 'workmem.token.kind',
  tokenReason: 'workmem.token.reason',
  memoryFile: 'workmem.memory.file',
} as const;

export const WM_METRIC = {
  tokens: 'workmem.tokens',
  requests: 'workmem.requests',
  compactions: 'workmem.compactions',
  memoryWrites: 'workmem.memory.writes',
  reminders: 'workmem.reminders',
  remindersHeeded: 'workmem.reminders.heeded',
  utilization: 'workmem.context.utilization',
  overhead: 'workmem.request.overhead',
} as const;

/** The agent's name on invoke_agent spans. */
export const AGENT_NAME = 'workmem';

/** Bucket boundaries the conventions give for the two client histograms. */
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
