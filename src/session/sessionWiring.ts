/**
 * The one place a session is wired: from what the registry opened (its record, state store,
 * counter, settings), the statics every turn shares, the host whose actors do the machines'
 * work, the trace and its live link, the event bus, and the session machine's input. Session
 * (session.ts) is a facade over what this returns; every door that drives a session goes
 * through it.
 */
import type { InspectionEvent } from 'xstate';
import type { SessionInput, SessionStatics } from '../../machines/sessionMachine.js';
import { sessionHost } from '../actors/sessionHost.js';
import type { CompactionDeps } from '../compaction/compact.js';
import { compactionStoreOf } from '../compaction/store.js';
import { backgroundSummarizer, modelSummarizer } from '../compaction/summarizer.js';
import type { SessionEvent } from '../events.js';
import type { HistoryView } from '../history/historyView.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import type { PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { latestUserText, relevantMemories } from '../itemMemory/relevantMemories.js';
import { HeldWrites } from '../memory/heldWrites.js';
import type { MemorySnapshot } from '../memory/memoryRules.js';
import type { TrackerState } from '../memory/reminderTracker.js';
import type { PromptTokens } from '../prompt/promptBuilder.js';
import { systemPrompt } from '../prompt/systemPrompt.js';
import type { resolveSettings } from '../settings/config.js';
import { defaultHome } from '../storage/sessionPaths.js';
import type { StateStore } from '../storage/stateStore.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { SessionTelemetrySource } from '../telemetry/telemetryOption.js';
import { LiveLink, liveUrl } from '../trace/liveLink.js';
import { TraceRecorder } from '../trace/traceRecorder.js';
import { EventBus } from './eventBus.js';
import { TRACKER_KEY, type OpenOptions } from './options.js';
import { sessionTools, type SessionTools } from './sessionTools.js';
import { TrackerWriter } from './trackerWriter.js';

/** What the registry hands a new Session: its opened files and store, and what opening found. */
export interface SessionParts {
  record: SessionRecord;
  /** The working memory as it was opened (the first request loads it again). */
  memory: MemorySnapshot;
  store: StateStore;
  counter: TokenCounter;
  options: OpenOptions;
  resolved: ReturnType<typeof resolveSettings>;
  tracker: TrackerState;
  damage: string[];
  items: PersistentItemMemory | null;
  /** Opened from disk (the trace continues) rather than created. */
  resumed: boolean;
  /** OpenTelemetry, when it is on (telemetryOption.ts). */
  telemetry?: SessionTelemetrySource | null;
}

export interface SessionWiring {
  /** The session machine's input: statics (with the host) and the state the record holds. */
  input: SessionInput;
  statics: SessionStatics;
  inspect: ((event: InspectionEvent) => void) | undefined;
  tools: SessionTools;
  bus: EventBus;
  /** A prompt was queued (telemetry keeps the context it came in, for its turn's span). */
  enqueued: ((promptId: string) => void) | undefined;
  /** Persist what is written behind (tracker, item memory), then release the trace, live link, record and store. */
  close(tracker: TrackerState): Promise<void>;
}

/**
 * Wire a session. `dispatch` receives every event the session reports (the machines' and
 * the actors'); the facade publishes it on the bus and settles its promises there.
 */
export function wireSession(
  parts: SessionParts,
  dispatch: (event: SessionEvent) => void,
  lastRequest: () => PromptTokens | null,
): SessionWiring {
  const { record, counter, options, resolved, items } = parts;
  const now = options.now ?? Date.now;
  const trackerWriter = new TrackerWriter(parts.store, TRACKER_KEY(record.id));
  const trace = options.trace === false ? null : new TraceRecorder(record.storage.trace, record.id, parts.resumed, now, record.redact);
  let live: LiveLink | null = null;
  if (trace && options.visualizer) {
    const home = options.home ?? defaultHome(options.env ?? process.env); // where the viz token is
    const link = (live = new LiveLink(liveUrl(options.visualizer), record.id, options.warn, home));
    trace.onRecord((r) => link.send(r));
  }
  const bus = new EventBus(record.id, record.redact, now, trace ? (event) => trace.event(event) : undefined, options.warn);
  const telemetry = parts.telemetry?.forSession(record.id, options.llm) ?? null;
  if (telemetry) bus.on('*', telemetry.listen);
  const llm = telemetry ? telemetry.wrapModel(options.llm) : options.llm;
  const summarizing = { llm, counter, contextWindow: resolved.turn.contextWindow };
  const background = backgroundSummarizer(summarizing);
  const compaction: CompactionDeps = {
    store: compactionStoreOf(record),
    counter,
    now,
    summarizer: modelSummarizer(summarizing),
    contextWindow: resolved.turn.contextWindow,
    lastRequest,
  };
  const tools = sessionTools({
    memory: record.memory,
    compaction,
    items,
    options,
    writeQuotaBytes: resolved.turn.writeQuotaBytes,
    held: new HeldWrites(record.heldFiles, resolved.turn.sessionWriteQuotaBytes),
    redact: record.redact,
    emit: dispatch,
    compactHistoryFloor: resolved.turn.compactHistoryFloor,
  });
  const systemPromptFor = (instructions: string | undefined, toolNames: string[], toolPrefix: string): string =>
    systemPrompt({
      ...(instructions ? { instructions } : {}),
      fallbackThreshold: resolved.turn.fallbackThreshold,
      compactHistoryFloor: resolved.turn.compactHistoryFloor,
      toolNames,
      ...(toolPrefix ? { toolPrefix } : {}),
    });
  const inject = items && options.itemMemory?.inject ? { ...options.itemMemory.inject, userId: options.itemMemory.userId } : null;
  const host = sessionHost({
    record,
    counter,
    llm,
    tools,
    outputLimits: resolved.turn.toolOutput,
    compaction,
    background,
    tracker: trackerWriter,
    trace,
    emit: dispatch,
    now,
    ...(options.random ? { random: options.random } : {}),
    redact: record.redact,
    systemPromptFor,
    ...(options.recordToolResults ? { recordToolResults: true } : {}),
    ...(inject && items
      ? { relevant: (history: HistoryView) => relevantMemories(items.memory, latestUserText(history), inject, counter) }
      : {}),
  });
  const statics: SessionStatics = {
    sessionId: record.id,
    systemPrompt: systemPromptFor(
      options.instructions,
      tools.all.map((t) => t.name),
      tools.prefix,
    ),
    tools: tools.all.map((t) => t.spec),
    ...(tools.prefix ? { toolPrefix: tools.prefix } : {}),
    counter,
    // Without a summarizer the fallback only archives, at once: there is nothing to prepare.
    settings: background ? resolved.turn : { ...resolved.turn, backgroundThreshold: null },
    host: telemetry ? telemetry.wrapHost(host) : host,
  };

  const meta = record.meta;
  const pinned = resolved.pinned ?? meta.pinnedMode;
  const input: SessionInput = {
    statics,
    lastTurn: record.lastTurn,
    history: record.history,
    tracker: parts.tracker,
    calibration: meta.calibration,
    mode: pinned ?? meta.historyMode,
    pinned,
    health: parts.memory.health,
    modelWrites: meta.memoryWrites,
    window: meta.recentWindow ?? null,
  };
  trace?.memory(parts.memory.version, parts.memory.content);
  trace?.flush(); // a page opened now finds the start on disk; live records follow

  return {
    input,
    statics,
    inspect: options.inspect || trace ? combineInspectors(options.inspect, trace?.inspect) : undefined,
    tools,
    bus,
    enqueued: telemetry ? (promptId) => telemetry.enqueued(promptId) : undefined,
    async close(tracker) {
      try {
        await trackerWriter.flush(tracker);
        await items?.flush();
      } finally {
        telemetry?.close();
        trace?.close();
        await live?.close();
        items?.detach();
        await record.close();
        await parts.store.close();
      }
    },
  };
}

function combineInspectors(...inspectors: (((event: InspectionEvent) => void) | undefined)[]): (event: InspectionEvent) => void {
  const list = inspectors.filter((i): i is (event: InspectionEvent) => void => !!i);
  return (event) => {
    for (const inspect of list) inspect(event);
  };
}
