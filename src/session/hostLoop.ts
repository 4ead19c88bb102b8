/**
 * A session driven by a host's own agent loop — the AI SDK and LangChain middleware, the
 * proxy — through the same machines as Session's own loop. Per model call the host hands
 * over every message its loop holds; the session records what is new and builds the
 * request the turn would send (memory, history per phase, the tail, the 75 % fallback
 * first), the host calls its model with it and reports the answer, which is recorded. The
 * host runs its own tools and asks for workmem's (memory, compact_history). The model the
 * turn machine calls is a bridge to the host: one call at a time, the request goes out, the
 * answer (or the failure: an overflow is compacted once and the request built again) comes in.
 */
import { randomUUID } from 'node:crypto';
import type { HostCall, HostConversation, HostPassOutcome } from '../../machines/sessionMachine.js';
import type { ToolResult } from '../../machines/turnMachine.js';
import type { TurnError } from '../events.js';
import type { ChatMessage, ToolCall } from '../history/messages.js';
import type { LLM, LLMCallOptions, LLMRequest, LLMResponse } from '../llm/llm.js';
import { LLMError } from '../llm/llm.js';
import { keptPositions } from '../history/keptPositions.js';
import { SESSION_ID } from '../storage/sessionPaths.js';
import { SessionNotFoundError } from '../storage/storeErrors.js';
import type { ProviderCaching } from '../settings/settings.js';
import type { Tool, ToolSpec } from '../tools/tool.js';
import type { SessionOptions } from './options.js';
import { createSession, openSession } from './registry.js';
import type { Session } from './session.js';
import { sessionIdFor } from './sessionName.js';

export interface HostLoopOptions extends Omit<SessionOptions, 'llm' | 'tools' | 'instructions' | 'id'> {
  /** The session: a lowercase UUID, or any name (the same name is the same session); default a new one. */
  sessionId?: string;
  /** The host's model: its name (for the token counter) and its context window. */
  model: string;
  contextWindow: number;
  /** Tokens reserved for the answer (default: the settings' reserve). */
  maxOutputTokens?: number;
  /** One non-streaming request, for compaction summaries; without it compaction archives only. */
  summarize?: LLM['summarize'];
  /** Who serves the host's model (`openai`, `anthropic`, …), for OpenTelemetry's `gen_ai.provider.name`. */
  provider?: string;
  /**
   * How the host's provider caches prompts, as an LLM's `caching` says (default 'automatic'):
   * the session's refreshes weigh what they give up of the cache by it.
   */
  caching?: ProviderCaching;
}

/** A message of a host's loop: `pinned: true` on a user message pins it (every request carries it, no compaction replaces it). */
export type HostMessage = ChatMessage & { pinned?: boolean };

/** One model call, prepared: send `request`, then report how it went. */
export interface PreparedCall {
  /** What to send the model: workmem's messages, the tools as given, the output limit, the cache breakpoints. */
  request: LLMRequest;
  /** Text as it streams (for the session's events and trace). */
  text(delta: string): void;
  /** The model's answer: recorded before this resolves. */
  answer(response: LLMResponse): Promise<void>;
  /** The call failed: an overflow is compacted and the request built again (send it); otherwise null, the turn is over. */
  fail(error: unknown): Promise<PreparedCall | null>;
}

export class HostLoop {
  /** The pass in progress ends before the next starts: one writer, one call at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The caller waiting for the turn's next request (prepare, or fail after an overflow). */
  private waiting: ((call: PreparedCall) => void) | null = null;
  /** How the pass in progress will end. */
  private current: Promise<HostPassOutcome> | null = null;
  /** Calls prepared so far. */
  private calls = 0;

  private constructor(
    readonly session: Session,
    bridge: Bridge,
    /** The session was created by this open (it did not exist). */
    readonly created: boolean,
  ) {
    bridge.deliver = (request, options) => this.deliver(request, options);
  }

  /** Open the named session (or create it), driven by a host's loop. */
  static async open(options: HostLoopOptions): Promise<HostLoop> {
    const { sessionId, model, contextWindow, maxOutputTokens, summarize, provider, caching, ...rest } = options;
    const reserve = maxOutputTokens ?? rest.settings?.reserveOutputTokens ?? 4096;
    const bridge = new Bridge(model, contextWindow, reserve, summarize, provider, caching);
    // The host's loop retries a failed call itself; the session compacts on an overflow.
    const settings = { ...rest.settings, retry: { maxRetries: 0, ...rest.settings?.retry } };
    const common = { ...rest, llm: bridge, settings };
    let session: Session;
    let created = true;
    if (!sessionId) session = await createSession(common);
    else {
      const id = SESSION_ID.test(sessionId) ? sessionId : sessionIdFor(sessionId);
      try {
        session = await openSession(id, common);
        created = false;
      } catch (error) {
        // Not found: the registry says so as a usage error (ConfigError) whose cause is the store's.
        if (!(error instanceof SessionNotFoundError || (error as Error).cause instanceof SessionNotFoundError)) throw error;
        session = await createSession({ ...common, id, ...(id !== sessionId ? { name: sessionId } : {}) });
      }
    }
    return new HostLoop(session, bridge, created);
  }

  /**
   * workmem's own tools (memory, compact_history, item memory) under their own names: a door
   * makes its executors from them and runs them here. Beside a host's tools they are sent
   * under the names toolNaming.ts gives them (`ownToolName`, `isOwnTool`).
   */
  get tools(): readonly Tool[] {
    return this.session.toolBox.own;
  }

  /** The name one of workmem's own tools is sent under beside the host's tools of the last call prepared. */
  ownToolName(own: string): string {
    return this.session.toolBox.sentName(own);
  }

  /** Whether a call's name is one of workmem's own tools as sent with the last call prepared. */
  isOwnTool(name: string): boolean {
    return this.session.toolBox.isOwn(name);
  }

  /**
   * Everything the host's loop holds for this call (its system messages are its instructions)
   * and its own tools (not workmem's: those are named beside them and sent first): the request
   * to send instead. A host may hand over its conversation
   * as a view read by index, converting a message only when it is read. A user message
   * marked pinned (`pinned: true`, or the view's `pinned(index)`) is pinned when it is recorded.
   * `whole`: the host always sends its whole conversation, so wherever it departs from the log
   * it took a branch of its own (it edited, regenerated or compacted its history), which the
   * session follows.
   */
  prepare(
    call: ({ messages: readonly HostMessage[]; tools: readonly ToolSpec[] } | Omit<HostCall, 'id' | 'resume'>) & { whole?: boolean },
  ): Promise<PreparedCall> {
    const id = randomUUID();
    let given: Pick<HostCall, 'instructions' | 'conversation'>;
    try {
      given = 'messages' in call ? splitSystem(call.messages) : { instructions: call.instructions, conversation: call.conversation };
    } catch (error) {
      return Promise.reject(error);
    }
    // The first call of this loop may come in the middle of a turn (a loop opened per request): it resumes it.
    const hostCall: HostCall = {
      id,
      ...given,
      // workmem's own specs, if a host hands them back with its own, are not its tools.
      tools: this.hostToolsOf(call.tools),
      ...(call.whole ? { whole: true } : {}),
      ...(this.calls++ === 0 ? { resume: true } : {}),
    };
    return this.exclusive(async () => {
      const delivered = this.nextRequest();
      const ended = (this.current = this.session.hostPass({ type: 'call', call: hostCall }));
      const first = await Promise.race([delivered, ended.then((outcome) => ({ outcome }))]);
      if (!('outcome' in first)) return { call: first, done: ended };
      this.waiting = null;
      throw passError(first.outcome, 'the call');
    });
  }

  /** Run workmem's tools the model called, in order: their results, for the host to send back. */
  runTools(calls: ToolCall[]): Promise<ToolResult[]> {
    return this.exclusive(async () => {
      const ended = this.session.hostPass({ type: 'tools', id: randomUUID(), calls });
      const outcome = await ended;
      if (!outcome.output) throw passError(outcome, 'the tools');
      return { call: outcome.output.results, done: ended };
    });
  }

  private hostToolsOf(tools: readonly ToolSpec[]): readonly ToolSpec[] {
    const own = new Set<ToolSpec>(this.session.toolBox.own.map((t) => t.spec));
    return tools.some((t) => own.has(t)) ? tools.filter((t) => !own.has(t)) : tools;
  }

  async close(): Promise<void> {
    await this.queue.catch(() => {});
    await this.session.close();
  }

  /** Runs `start` after the pass before has ended; the next waits for this pass's end (`done`). */
  private exclusive<T>(start: () => Promise<{ call: T; done: Promise<unknown> }>): Promise<T> {
    const run = this.queue.catch(() => {}).then(start);
    this.queue = run.then((r) => r.done).catch(() => {});
    return run.then((r) => r.call);
  }

  private nextRequest(): Promise<PreparedCall> {
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** The turn machine's request, handed to the host: settled by its answer or its failure. */
  private deliver(request: LLMRequest, options: LLMCallOptions): Promise<LLMResponse> {
    const waiting = this.waiting;
    this.waiting = null;
    if (!waiting) return Promise.reject(new Error('a request was built with no host call waiting for it'));
    return new Promise<LLMResponse>((resolve, reject) => {
      const aborted = (): void => reject(new LLMError('aborted', 'the request was aborted'));
      options.signal.addEventListener('abort', aborted, { once: true });
      const settled = (): void => options.signal.removeEventListener('abort', aborted);
      const ended = this.current;
      const passEnd = (): Promise<HostPassOutcome> => ended ?? Promise.reject(new Error('no pass in progress'));
      waiting({
        request,
        text: (delta) => options.onText(delta),
        answer: async (response) => {
          settled();
          resolve(response);
          const outcome = await passEnd();
          if (outcome.error || outcome.output?.status !== 'done') throw passError(outcome, 'the answer');
        },
        fail: async (error) => {
          settled();
          const retried = this.nextRequest();
          reject(error instanceof Error ? error : new Error(String(error)));
          const next = await Promise.race([retried, passEnd().then(() => null)]);
          if (next === null) this.waiting = null;
          return next;
        },
      });
    });
  }
}

/** The session's model: requests go to the host waiting for them (HostLoop.deliver). */
class Bridge implements LLM {
  deliver: (request: LLMRequest, options: LLMCallOptions) => Promise<LLMResponse> = () =>
    Promise.reject(new Error('no host loop attached'));
  readonly summarize?: LLM['summarize'];
  readonly caching?: ProviderCaching;

  constructor(
    readonly model: string,
    readonly contextWindow: number,
    readonly maxOutputTokens: number,
    summarize: LLM['summarize'] | undefined,
    readonly provider: string | undefined,
    caching: ProviderCaching | undefined,
  ) {
    if (summarize) this.summarize = summarize;
    // Unset, the settings' default ('automatic') holds.
    if (caching) this.caching = caching;
  }

  complete(request: LLMRequest, options: LLMCallOptions): Promise<LLMResponse> {
    return this.deliver(request, options);
  }
}

/** A message list as instructions (its system messages) and the conversation, its pins apart. */
function splitSystem(messages: readonly HostMessage[]): { instructions: string | undefined; conversation: HostConversation } {
  const system: number[] = [];
  let pinned = false;
  // One pass and nothing built per message: a host hands over its whole conversation on every call.
  messages.forEach((m, i) => {
    if (m.role !== 'system') return;
    system.push(i);
    if (m.pinned) pinned = true;
  });
  const instructions = system.map((i) => messages[i]!.content).join('\n\n') || undefined;
  // Without instructions the system messages (all empty) stay in the conversation.
  const kept = keptPositions(messages.length, instructions === undefined ? [] : system);
  if (instructions !== undefined && pinned)
    throw new TypeError(
      'a system message is marked pinned, but only a user message can be pinned (the instructions go with every request anyway)',
    );
  return {
    instructions,
    conversation: {
      length: kept.length,
      at: (i) => {
        const message = messages[kept.at(i)]!;
        if (!('pinned' in message)) return message;
        const { pinned: _, ...plain } = message;
        return plain as ChatMessage;
      },
      pinned: (i) => messages[kept.at(i)]!.pinned === true,
    },
  };
}

/** A host loop's call or tools that the session could not take, with the turn's error. */
export class HostLoopError extends Error {
  override name = 'HostLoopError';
  constructor(readonly turnError: TurnError) {
    super(turnError.message);
  }
}

function passError(outcome: HostPassOutcome, what: string): HostLoopError {
  return new HostLoopError(
    outcome.output?.error ?? {
      kind: 'internal',
      message: `${what} was not taken: ${outcome.error ?? `the turn ended ${outcome.output?.status ?? 'without an outcome'}`}`,
      retryable: false,
    },
  );
}
