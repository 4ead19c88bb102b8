/**
 * The host of one session: what the machines' actors do for it, over its storage, its
 * model and its tools. The machines are provided once for every session (see
 * hostedMachine.ts); each actor finds this host in its input.
 */
import type { PersistModeInput, SessionHost } from '../../machines/sessionMachine.js';
import { hostCallAcceptor } from './acceptCall.js';
import { runCompactor } from './compactor.js';
import { runBackgroundSummary } from './backgroundSummary.js';
import type { BackgroundSummarizer } from '../compaction/summarizer.js';
import { runLlmRequest } from './llmRequest.js';
import { runToolCalls } from './toolRunner.js';
import type { CompactionDeps } from '../compaction/compact.js';
import type { SessionEvent } from '../events.js';
import { answerInterruptedCalls } from '../history/crashRecovery.js';
import type { HistoryView } from '../history/historyView.js';
import type { ToolCall } from '../history/messages.js';
import { baseKey, type RecentWindow } from '../history/recentWindow.js';
import type { PromptBase } from '../prompt/promptBuilder.js';
import type { SessionMeta } from '../storage/sessionMeta.js';
import type { LLM } from '../llm/llm.js';
import { TOOL_OUTPUTS_DIR, type MemorySnapshot } from '../memory/memoryRules.js';
import type { Redact } from '../secrets/redact.js';
import type { TrackerWriter } from '../session/trackerWriter.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { SessionTools } from '../session/sessionTools.js';
import { SavedOutputNames } from '../tools/savedOutputNames.js';
import { capOutput, type OutputLimits } from '../tools/toolOutputCap.js';
import type { TraceRecorder } from '../trace/traceRecorder.js';
import { boundErrorText } from '../errors/errorText.js';

export interface SessionHostDeps {
  record: SessionRecord;
  counter: TokenCounter;
  llm: LLM;
  /** The session's tools: workmem's own (their output is the memory itself, never copied to detail/) and the host's. */
  tools: SessionTools;
  outputLimits: OutputLimits;
  compaction: CompactionDeps;
  /** The summarizer of background summaries (null: the model has none, and nothing is prepared). */
  background: BackgroundSummarizer | null;
  tracker: TrackerWriter;
  trace: TraceRecorder | null;
  emit(event: SessionEvent): void;
  now(): number;
  random?: () => number;
  redact: Redact;
  /** Remembered items to inject after overview.md for this history, if item memory injects. */
  relevant?: (history: HistoryView) => string;
  /** The system prompt for a host loop's instructions and tools (the session's settings otherwise). */
  systemPromptFor(instructions: string | undefined, toolNames: string[], toolPrefix: string): string;
  /** A host loop's host never sends workmem's results back: they are recorded as the tools run. */
  recordToolResults?: boolean;
}

export function sessionHost(deps: SessionHostDeps): SessionHost {
  const { record, counter, emit } = deps;
  const saved = new SavedOutputNames(
    async () => (await record.memory.files.list(TOOL_OUTPUTS_DIR)).map((e) => e.path.split('/').pop()!),
    TOOL_OUTPUTS_DIR,
  );
  const toolDeps = {
    record,
    tools: deps.tools,
    counter,
    emit,
    now: deps.now,
    recordHostResults: deps.recordToolResults === true,
    capture: (call: ToolCall, content: string, turn: number) =>
      capOutput(
        content,
        deps.outputLimits,
        deps.tools.isOwn(call.function.name) ? null : async (full) => record.memory.writeSystem(await saved.name(turn, '.txt'), full),
      ),
  };
  const acceptCall = hostCallAcceptor({
    record,
    counter,
    emit,
    redact: deps.redact,
    tools: deps.tools,
    capture: toolDeps.capture,
    systemPromptFor: deps.systemPromptFor,
    ...(deps.trace ? { traceHost: deps.trace.host.bind(deps.trace) } : {}),
  });
  return {
    report: emit,
    acceptCall,
    loadMemory: async () => {
      const snapshot = await record.memory.snapshot();
      deps.trace?.memory(snapshot.version, snapshot.content);
      const relevant = deps.relevant?.(record.history);
      // Copied, then completed (not a spread and new fields: fresh hidden classes each request).
      const memory: MemorySnapshot = Object.assign({}, snapshot);
      if (relevant) memory.relevant = relevant;
      memory.today = localDay(deps.now());
      return memory;
    },
    request: (input, signal) =>
      runLlmRequest(input, signal, {
        llm: deps.llm,
        record,
        counter,
        emit,
        saveArguments: async (call, turn) => record.memory.writeSystem(await saved.name(turn, '.arguments.json'), call.function.arguments),
        saveAnswer: async (text, turn) => record.memory.writeSystem(await saved.name(turn, '.answer.md'), text),
        ...(deps.random ? { random: deps.random } : {}),
        redact: deps.redact,
      }),
    runTools: (input, signal) => runToolCalls(input, signal, toolDeps),
    compact: (input, signal) => runCompactor(input, deps.compaction, emit, signal),
    summarize: (input, signal) => runBackgroundSummary(input, deps.background, signal),
    accept: async (input) => {
      // A turn stopped by a failed write may have left calls without results.
      for (const entry of await answerInterruptedCalls(record, counter))
        emit({ type: 'message_end', turn: entry.turn, request: 0, seq: entry.seq, tokens: entry.tokens, message: entry.message });
      const message = { role: 'user' as const, content: input.prompt.text };
      const pinned = input.prompt.pinned === true;
      const entry = await record.appendMessage(input.turn, message, counter.message(message), { sync: true, pinned });
      emit({
        type: 'message_end',
        turn: input.turn,
        request: 0,
        seq: entry.seq,
        tokens: entry.tokens,
        message,
        ...(pinned ? { pinned } : {}),
      });
      return { history: record.history };
    },
    save: async (input) => {
      await record.sync(); // what an aborted request or tool run kept is in the log, and in the history returned
      await record.updateMeta({
        turns: input.turn,
        historyMode: input.mode,
        pinnedMode: input.pinned,
        memoryWrites: input.modelWrites,
        calibration: input.output.calibration,
        recentWindow: savedWindow(input.output.window, input.output.base),
      });
      // Written behind (the end of a turn does not wait for the state store); a failed earlier write is reported here.
      deps.tracker.persist(input.output.tracker);
      deps.tracker.throwIfFailed();
      return { history: record.history };
    },
    persistMode: async (input) => {
      const work = persistMode(input);
      record.track(work); // closing the session waits for it
      await work;
    },
  };

  async function persistMode(input: PersistModeInput): Promise<void> {
    try {
      // Kept now, not only when the turn ends: a pin set just before exit survives it.
      await record.updateMeta({ historyMode: input.to, pinnedMode: input.pinned });
      if (input.to !== input.from)
        await record.appendEvent(input.turn, 'mode_changed', { from: input.from, to: input.to, pinned: input.pinned !== null });
    } catch (error) {
      const message = `the history mode was not saved: ${boundErrorText(error instanceof Error ? error.message : String(error))}`;
      emit({ type: 'error', turn: input.turn, error: { kind: 'storage', message, retryable: false }, fatal: false });
    }
  }
}

/** A time as the user's calendar day, YYYY-MM-DD (local time, as a file name a person reads). */
function localDay(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
}

/**
 * What a resumed session needs to send what an uninterrupted one would: phase 2's window
 * (`from` 0: none), and the memory block the last request carried in its place, which the
 * next may hold on to (memoryRefresh 'when-cheap').
 */
function savedWindow(window: RecentWindow | null, base: PromptBase | null): SessionMeta['recentWindow'] {
  const anchor = base && !base.memoryHead ? (base.anchor ?? base).block : undefined;
  if (!base || (!window && anchor === undefined)) return null;
  return { from: window?.from ?? 0, base: baseKey(base), ...(anchor !== undefined ? { anchor } : {}) };
}
