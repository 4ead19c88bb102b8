/**
 * One session's spans and metrics, from its events (events.ts) and from around the two
 * things events cannot time: the model calls (the session's model, wrapped) and a host
 * loop's calls (the session host's actors, wrapped). Loaded only when telemetry is on
 * (telemetryOption.ts loads telemetrySource.ts, which makes one of these per session).
 *
 * A turn is an `invoke_agent workmem` span in the context its prompt came in, with the model
 * calls, tools, memory operations, compactions and reminders under it (docs/observability.md);
 * a host loop's later call in another context (a proxy client's next traceparent) has its
 * spans there, linked to the turn. No attribute carries text, arguments, results or a key.
 */
import { context, SpanKind, trace, type Attributes, type Context, type Link, type Span, type Tracer } from '@opentelemetry/api';
import type { SessionHost } from '../../machines/sessionMachine.js';
import type { WorkmemEvent } from '../events.js';
import type { LLM, LLMRequest, LLMResponse } from '../llm/llm.js';
import { AGENT_NAME, ATTR, OPERATION, WM } from './conventions.js';
import type { Instruments } from './instruments.js';
import { tracedModelCall } from './modelCallSpan.js';
import { fail, kindOf, MAX_ID, MEMORY_OPS, pathOf, providerOf } from './spanKit.js';
import type { SessionTelemetryHooks } from './telemetryTypes.js';

/** A span and the context with it, for its children. */
type Open = { span: Span; ctx: Context };

export class SessionTelemetry implements SessionTelemetryHooks {
  private readonly model: string;
  private readonly provider: string;
  private readonly base: Attributes;
  private turn: (Open & { parentSpanId: string }) | null = null;
  private readonly tools = new Map<string, Open & { memory: Span | null; name: string; path: string | null }>();
  private compaction: (Open & { reason: string }) | null = null;
  private memoryRead: Span | null = null;
  /** A host loop's call or tool pass: the context it came in. */
  private pass: Context | null = null;
  private hosted = false;
  /** The context each queued prompt came in, until its turn starts. */
  private readonly prompts = new Map<string, Context>();
  private mode: string | null = null;
  private prompt: { request: number; total: number; window: number } | null = null;
  private reminderPending = false;
  /** workmem's own time for the request being prepared: since when, less the summaries' calls. */
  private since = performance.now();
  private excluded = 0;
  private before = 0;
  private answeredAt: number | null = null;

  constructor(
    private readonly tracer: Tracer,
    private readonly m: Instruments,
    private readonly sessionId: string,
    llm: LLM,
  ) {
    this.model = llm.model;
    this.provider = providerOf(llm);
    this.base = { [ATTR.provider]: this.provider, [ATTR.requestModel]: this.model };
  }

  /** The session's model, its calls traced: `chat` for requests, a summary's under its compaction. */
  wrapModel(llm: LLM): LLM {
    const summarize = llm.summarize;
    const wrapped: LLM = {
      get model() {
        return llm.model;
      },
      get contextWindow() {
        return llm.contextWindow;
      },
      get maxOutputTokens() {
        return llm.maxOutputTokens;
      },
      ...(llm.retry ? { retry: llm.retry } : {}),
      ...(llm.secrets ? { secrets: llm.secrets } : {}),
      complete: (request, options) => this.modelCall('turn', request, () => llm.complete(request, options)),
    };
    if (summarize)
      wrapped.summarize = (request, options) => this.modelCall('summary', request, () => summarize.call(llm, request, options));
    return wrapped;
  }

  /** The session host, its host-loop calls and memory loads traced. */
  wrapHost(host: SessionHost): SessionHost {
    return {
      ...host,
      acceptCall: (input) => {
        this.hosted = true;
        this.pass = context.active();
        this.startRequest();
        return host.acceptCall(input);
      },
      runTools: (input, signal) => {
        if (this.hosted) this.pass = context.active();
        return host.runTools(input, signal).finally(() => this.startRequest());
      },
      loadMemory: (input) => {
        this.memoryRead?.end();
        this.memoryRead = this.start('read_memory', {
          [ATTR.operation]: 'read_memory',
          [ATTR.memoryStore]: `${this.sessionId}/working-memory`,
          [ATTR.memoryRecord]: 'overview.md',
        });
        return host.loadMemory(input).catch((error: unknown) => {
          if (this.memoryRead) fail(this.memoryRead, kindOf(error));
          this.memoryRead = null;
          throw error;
        });
      },
    };
  }

  enqueued(promptId: string): void {
    this.prompts.set(promptId, context.active());
  }

  /** Hears every event the session publishes. */
  readonly listen = (event: WorkmemEvent): void => {
    switch (event.type) {
      case 'turn_start': {
        this.endTurn(null);
        const queued = this.prompts.get(event.promptId);
        this.prompts.delete(event.promptId);
        const parent = queued ?? (this.hosted ? (this.pass ?? context.active()) : context.active());
        const span = this.tracer.startSpan(
          `${OPERATION.invokeAgent} ${AGENT_NAME}`,
          {
            kind: SpanKind.INTERNAL,
            attributes: {
              [ATTR.operation]: OPERATION.invokeAgent,
              [ATTR.agentName]: AGENT_NAME,
              [ATTR.conversation]: this.sessionId,
              ...this.base,
              [WM.turn]: event.turn,
              ...(this.mode ? { [WM.historyMode]: this.mode } : {}),
            },
          },
          parent,
        );
        this.turn = { span, ctx: trace.setSpan(parent, span), parentSpanId: trace.getSpan(parent)?.spanContext().spanId ?? '' };
        if (!this.hosted) this.startRequest();
        return;
      }
      case 'memory_loaded':
        this.memoryRead?.setAttributes({ [WM.memoryVersion]: event.version, [WM.memoryBytes]: event.bytes, [ATTR.memoryRecordCount]: 1 });
        this.memoryRead?.end();
        this.memoryRead = null;
        return;
      case 'reminder': {
        const attributes = { [WM.reminderLevel]: event.level, [WM.reminderReason]: event.reason };
        this.start('reminder', { ...attributes, [WM.rounds]: event.rounds, [WM.windowShare]: event.tokensPercent / 100 }).end();
        this.m.reminders.add(1, attributes);
        this.reminderPending = true;
        return;
      }
      case 'prompt_built':
        this.mode = event.mode;
        this.prompt = { request: event.request, total: event.tokens.total, window: event.tokens.window };
        this.m.requests.add(1, { [WM.historyMode]: event.mode });
        if (event.tokens.window > 0) this.m.utilization.record(event.tokens.total / event.tokens.window, { [WM.historyMode]: event.mode });
        return;
      case 'message_end':
        if (event.message.role === 'assistant' && event.request > 0 && this.answeredAt !== null) {
          const after = performance.now() - this.answeredAt;
          this.answeredAt = null;
          this.m.overhead.record((this.before + after) / 1000, this.mode ? { [WM.historyMode]: this.mode } : {});
        }
        return;
      case 'tool_start': {
        const op = MEMORY_OPS[event.name];
        const open = this.startOpen(`${OPERATION.executeTool} ${event.name}`, {
          [ATTR.operation]: OPERATION.executeTool,
          [ATTR.toolName]: event.name,
          [ATTR.toolCallId]: event.callId.slice(0, MAX_ID),
          [ATTR.toolType]: 'function',
        });
        const path = op && (event.name === 'write' || event.name === 'edit') ? pathOf(event.arguments) : null;
        const memory = op
          ? this.tracer.startSpan(
              op,
              {
                kind: SpanKind.INTERNAL,
                attributes: {
                  [ATTR.operation]: op,
                  [ATTR.memoryStore]: path === null ? `${this.sessionId}/items` : `${this.sessionId}/working-memory`,
                  ...(path ? { [ATTR.memoryRecord]: path, [ATTR.memoryRecordCount]: 1 } : {}),
                },
              },
              open.ctx,
            )
          : null;
        this.tools.set(event.callId, { ...open, memory, name: event.name, path });
        return;
      }
      case 'tool_end': {
        const tool = this.tools.get(event.callId);
        if (!tool) return;
        this.tools.delete(event.callId);
        if (event.isError) {
          if (tool.memory) fail(tool.memory, 'tool_error');
          fail(tool.span, 'tool_error');
          return;
        }
        tool.memory?.end();
        tool.span.end();
        if (tool.path !== null) this.m.memoryWrites.add(1, { [WM.memoryFile]: tool.path === 'overview.md' ? 'overview' : 'detail' });
        return;
      }
      case 'memory_updated':
        if (this.reminderPending) this.m.remindersHeeded.add(1);
        this.reminderPending = false;
        return;
      case 'compaction_start': {
        // The model's own compact_history runs inside its tool span.
        const tool = [...this.tools.values()].at(-1);
        const attributes = { [WM.compactionReason]: event.reason, [WM.tokensBefore]: event.tokensBefore };
        const span = this.tracer.startSpan(
          `compaction ${event.reason}`,
          { kind: SpanKind.INTERNAL, attributes },
          tool?.ctx ?? this.parent(),
        );
        this.compaction?.span.end();
        this.compaction = { span, ctx: trace.setSpan(tool?.ctx ?? this.parent(), span), reason: event.reason };
        return;
      }
      case 'compaction_end':
        this.compaction?.span.setAttributes({ [WM.tokensAfter]: event.tokensAfter, [WM.replaced]: event.replaced });
        this.compaction?.span.end();
        this.compaction = null;
        this.m.compactions.add(1, { [WM.compactionReason]: event.reason });
        return;
      case 'prompt_dropped':
        this.prompts.delete(event.promptId);
        return;
      case 'mode_changed':
        this.mode = event.to;
        return;
      case 'retry':
        this.turn?.span.addEvent('workmem.retry', { attempt: event.attempt, [ATTR.errorType]: event.error.kind });
        return;
      case 'turn_end':
        this.turn?.span.setAttributes({
          [WM.status]: event.status,
          [WM.requests]: event.requests,
          ...(this.mode ? { [WM.historyMode]: this.mode } : {}),
          ...(event.usage
            ? {
                [ATTR.inputTokens]: event.usage.input,
                [ATTR.cacheReadTokens]: event.usage.cached,
                [ATTR.outputTokens]: event.usage.output,
              }
            : {}),
        });
        this.endTurn(event.status === 'failed' ? (event.error?.kind ?? '_OTHER') : null);
        return;
      default:
        return;
    }
  };

  /** Ends whatever is open (the session closes). */
  close(): void {
    this.endTurn(null);
  }

  private async modelCall(reason: 'turn' | 'summary', request: LLMRequest, call: () => Promise<LLMResponse>): Promise<LLMResponse> {
    const started = performance.now();
    const summary = reason === 'summary';
    if (!summary) this.before = Math.max(0, started - this.since - this.excluded);
    const tokenReason = summary ? (this.compaction?.reason === 'background' ? 'background' : 'summary') : 'turn';
    const attributes: Attributes = {
      [ATTR.operation]: OPERATION.chat,
      ...this.base,
      [ATTR.conversation]: this.sessionId,
      [ATTR.maxTokens]: request.maxOutputTokens,
      [WM.tokenReason]: tokenReason,
    };
    if (!summary && this.prompt) {
      attributes[WM.request] = this.prompt.request;
      attributes[WM.promptTokens] = this.prompt.total;
      attributes[WM.window] = this.prompt.window;
      if (this.mode) attributes[WM.historyMode] = this.mode;
    }
    const parent = summary && this.compaction ? this.compaction.ctx : this.parent();
    const traced = {
      tracer: this.tracer,
      instruments: this.m,
      model: this.model,
      base: this.base,
      parent,
      links: this.links(),
      attributes,
      tokenReason,
    };
    try {
      return await tracedModelCall(traced, call);
    } finally {
      // A summary's call is not workmem's own time; a turn's answer is recorded from now.
      if (summary) this.excluded += performance.now() - started;
      else this.answeredAt = performance.now();
    }
  }

  /** A new request is being prepared from now. */
  private startRequest(): void {
    this.since = performance.now();
    this.excluded = 0;
  }

  /** Where a span of the turn goes: under the turn, or under the context a host loop's later call came in. */
  private parent(): Context {
    const turn = this.turn;
    if (!this.hosted) return turn?.ctx ?? context.active();
    const pass = this.pass ?? context.active();
    if (!turn) return pass;
    return (trace.getSpan(pass)?.spanContext().spanId ?? '') === turn.parentSpanId ? turn.ctx : pass;
  }

  /** A span away from its turn links to it. */
  private links(): { links?: Link[] } {
    const turn = this.turn;
    if (!turn || this.parent() === turn.ctx) return {};
    return { links: [{ context: turn.span.spanContext() }] };
  }

  private start(name: string, attributes: Attributes): Span {
    return this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, ...this.links() }, this.parent());
  }

  private startOpen(name: string, attributes: Attributes): Open {
    const parent = this.parent();
    const span = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, ...this.links() }, parent);
    return { span, ctx: trace.setSpan(parent, span) };
  }

  private endTurn(errorKind: string | null): void {
    for (const tool of this.tools.values()) {
      if (tool.memory) fail(tool.memory, 'aborted');
      fail(tool.span, 'aborted');
    }
    this.tools.clear();
    if (this.compaction) fail(this.compaction.span, 'aborted');
    this.compaction = null;
    if (this.memoryRead) fail(this.memoryRead, 'aborted');
    this.memoryRead = null;
    if (this.turn) {
      if (errorKind) fail(this.turn.span, errorKind);
      else this.turn.span.end();
    }
    this.turn = null;
  }
}
