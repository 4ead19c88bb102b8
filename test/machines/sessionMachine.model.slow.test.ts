/**
 * The session machine, model-based: xstate/graph walks its definition (every state, and
 * every event that can arrive there), each path is replayed on the real machine with
 * deterministic fakes for its actors — accept and save settle only when the path says so,
 * the turn and historyMode children are small machines that note what they are told — and
 * what the session shows outward on each path (its emitted events in order, what its
 * children were told, its context at the end) must equal what a small reference model of
 * the session says. The test fails if a state or a transition of the machine is never taken.
 */
import { createActor, fromPromise, setup, type AnyActor, type SnapshotFrom } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import { describe, expect, it } from 'vitest';
import {
  sessionMachine,
  type AcceptInput,
  type PersistModeInput,
  type QueuedPrompt,
  type SessionInput,
} from '../../machines/sessionMachine.js';
import type { TurnOutput } from '../../machines/turnMachine.js';
import type { SessionEvent } from '../../src/events.js';
import { appendItem, fromItems, type HistoryItem, type HistoryMode, type HistoryView } from '../../src/history/historyView.js';
import { backgroundOrder } from '../../src/compaction/background.js';
import type { BackgroundOrder, PreparedSummary } from '../../src/compaction/prepared.js';
import type { PromptBase } from '../../src/prompt/promptBuilder.js';
import { defaultTurnSettings } from '../../src/settings/settings.js';
import { memoryHealth } from '../../src/memory/memoryTemplate.js';
import { INITIAL_TRACKER } from '../../src/memory/reminderTracker.js';
import { allStateIds, allTransitions, runPaths, type PathRun } from './pathRunner.js';

/** The machine's event names in one place: a rename of them is one edit here. */
const EV = {
  prompt: 'prompt',
  abort: 'abort',
  setMode: 'mode.set',
  mode: 'mode.announced',
  compact: 'compact',
  memoryWritten: 'memory.written',
  // What the session tells its children.
  turnAbort: 'abort',
  turnMode: 'mode.changed',
  pin: 'mode.pin',
  unpin: 'mode.unpin',
  evaluate: 'memory.evaluate',
  // What the running turn sends up.
  report: 'turn.report',
} as const;

const ACCEPT_DONE = 'xstate.done.actor.accept';
const ACCEPT_ERROR = 'xstate.error.actor.accept';
const TURN_DONE = 'xstate.done.actor.turn';
const SAVE_DONE = 'xstate.done.actor.save';
const SAVE_ERROR = 'xstate.error.actor.save';
const BACKGROUND_DONE = 'xstate.done.actor.background';
const BACKGROUND_ERROR = 'xstate.error.actor.background';
const BACKGROUND_RETRY = 'xstate.after.backgroundRetry.session.background.resting';
const COMPACTOR_DONE = 'xstate.done.actor.compactor';
const COMPACTOR_ERROR = 'xstate.error.actor.compactor';
/** The user's compaction, between turns. */
const COMPACT: Step = { type: EV.compact, id: 'k1', target: 'all', strategy: 'archive', keepRecent: 3 };
const REFUSED = 'a turn is running: wait for it or abort it, then compact';
const ACCEPT_CALL_DONE = 'xstate.done.actor.acceptCall';
const ACCEPT_CALL_ERROR = 'xstate.error.actor.acceptCall';
const BUSY = 'the session is busy with another call: one at a time';
/** A host loop's model call, and its tools pass (workmem's write, which the model called). */
const CALL: Step = {
  type: 'call',
  call: { id: 'h1', instructions: undefined, conversation: { length: 1, at: () => ({ role: 'user', content: 'hi' }) }, tools: [] },
};
const TOOLS: Step = { type: 'tools', id: 'h2', calls: [{ id: 'c1', type: 'function', function: { name: 'write', arguments: '{}' } }] };

type Snap = SnapshotFrom<typeof sessionMachine>;
type Step = { type: string; [key: string]: unknown };

/** What the fake children were told, in order: `turn:ABORT`, `historyMode:PIN phase2`… (a turn started with a prepared summary: `turn:prepared 1-3`) */
let told: string[] = [];
const listener = (child: string) =>
  setup({}).createMachine({
    id: child,
    entry: ({ event }) => {
      const prepared = (event as { input?: { prepared?: PreparedSummary } }).input?.prepared;
      if (prepared) told.push(`${child}:prepared ${prepared.turns}`);
    },
    on: {
      '*': {
        actions: ({ event }) => {
          const e = event as Step;
          told.push(`${child}:${e.type}${typeof e.mode === 'string' ? ` ${e.mode}` : ''}`);
        },
      },
    },
  });

const pending = () => fromPromise(() => new Promise<never>(() => {}));
/** The mode changes the session asked to persist, in order: `phase1→phase2 pinned phase2`. */
let persisted: string[] = [];
const persistMode = fromPromise<void, PersistModeInput>(async ({ input }) => {
  persisted.push(`${input.from}→${input.to} pinned ${input.pinned}`);
});
/** The prompts the accept actor was given, in order (a pinned one says so: accept records it pinned). */
let accepted: QueuedPrompt[] = [];
const accept = fromPromise<never, AcceptInput>(({ input }) => {
  accepted.push(input.prompt);
  return new Promise<never>(() => {});
});
const machine = sessionMachine.provide({
  actors: {
    accept,
    save: pending(),
    compactor: pending(),
    backgroundSummary: pending(),
    turn: listener('turn'),
    historyMode: listener('historyMode'),
    persistMode,
  } as never,
});
/** Something the running turn reports: the session passes it on as its own event. */
const REPORT: SessionEvent = { type: 'memory_loaded', turn: 1, request: 1, version: 1, bytes: 10, detailFiles: 0 };

const saved = (n: number): HistoryView =>
  fromItems(
    Array.from({ length: n }, (_, i) => ({ seq: i + 1, turn: 1, message: { role: 'user' as const, content: `m${i}` }, tokens: 1 })),
  );
const template = memoryHealth('# Working Memory\n\n## Current task\n<!-- what? -->\n');
const real = { differsFromTemplate: true, contentChars: 120 };

// ---------------------------------------------------------------------------------------
// Background compaction: a window of 2,000 tokens, the background threshold at 60 % (1,200), a
// prompt base of 200. A turn that ends with LONG (four turns of 200 tokens) passes it; the real
// policy then plans the fallback's archive, its oldest three turns. COMPACTED is what the
// model's own compaction leaves: those turns are gone.
// Phase 2 carries the last 3 turns, as in the seed's layout, so that it has something to compact.
const SETTINGS = { ...defaultTurnSettings(2_000, 100), keepRecentTurns: 1, recentTurns: 3, recentTurnsStep: 1 };
const BASE = {
  systemPrompt: 'test',
  tools: [],
  memoryVersion: 1,
  relevant: '',
  systemContent: 'test',
  tokens: 200,
} as unknown as PromptBase;
const item = (seq: number, turn: number, role: 'user' | 'assistant', tokens = 100): HistoryItem => ({
  seq,
  turn,
  message: { role, content: `${role} ${seq}` },
  tokens,
});
const LONG = fromItems(Array.from({ length: 8 }, (_, i) => item(i + 1, Math.floor(i / 2) + 1, i % 2 ? 'assistant' : 'user')));
/** LONG and the next turn's user message, as accept appends it. */
const LONG_PLUS = appendItem(fromItems(LONG.items), item(9, 5, 'user'));
const COMPACTED = fromItems([
  { seq: 10, turn: 4, message: { role: 'user', content: '[Earlier conversation compacted: turns 1-3.]' }, tokens: 80 },
  LONG.items[6]!,
  LONG.items[7]!,
]);
/** The order the real policy makes of a history in a mode (checked below against the figures worked out here). */
const orderOf = (history: HistoryView, mode: HistoryMode): BackgroundOrder =>
  backgroundOrder({ history, mode, turn: 1, base: BASE, calibration: 0, statics: { settings: SETTINGS } })!;
/** The oldest three turns; in phase 2, of LONG_PLUS, the three before the active one (phase 2 carries only those). */
const ORDER = orderOf(LONG, 'phase1');
const ORDER_PHASE2 = orderOf(LONG_PLUS, 'phase2');
const PREPARED: PreparedSummary = { ...ORDER, summary: 'the gist', usage: { input: 900, cached: 0, output: 60 }, ms: 2_000 };
/** A history still holding the order's turns, as they were. */
const covers = (history: HistoryView) => history === LONG || history === LONG_PLUS;

const input: SessionInput = {
  statics: { sessionId: 's', systemPrompt: 'test', tools: [], counter: {} as never, settings: SETTINGS },
  lastTurn: 0,
  history: saved(0),
  tracker: INITIAL_TRACKER,
  calibration: 0,
  mode: 'phase1',
  pinned: null,
  health: template,
  modelWrites: 0,
};

function turnOutput(s: Snap, status: 'done' | 'aborted' | 'failed', toolCalls = 0): TurnOutput {
  return {
    status,
    text: status === 'done' ? 'the answer' : '',
    error: status === 'failed' ? { kind: 'auth', message: '401', retryable: false } : null,
    requests: status === 'aborted' ? 0 : 1,
    history: saved(s.context.turn * 2),
    tracker: { ...s.context.tracker, rounds: s.context.tracker.rounds + 1, forceNext: false },
    calibration: 0,
    base: null,
    tailHint: 0,
    window: null,
    toolCalls,
    results: [],
  };
}

/**
 * The events that can arrive in a state: an actor's outcome only while it runs. Prompts
 * and memory writes are bounded so the graph stays finite: two prompts, one memory write.
 */
function eventsIn(s: Snap): Step[] {
  if (s.status !== 'active') return [];
  const c = s.context;
  if (c.base !== null) return backgroundWorld(s);
  const events: Step[] = [
    { type: EV.abort },
    { type: EV.setMode, mode: 'phase2' },
    { type: EV.setMode, mode: 'auto' },
    // historyMode announcing a switch: pinned one time, automatic the next.
    { type: EV.mode, mode: c.mode === 'phase1' ? 'phase2' : 'phase1', pinned: c.pinned === null },
    // … and pinning (or unpinning) the mode it is in: no switch, but the pin is kept.
    { type: EV.mode, mode: c.mode, pinned: c.pinned === null },
  ];
  // Paths take one of three worlds, so the graph stays small: a user's prompts, a user's
  // compaction, or a host loop's passes (each also tried where it is refused).
  const prompted = c.turn > 0 || c.queue.length > 0 || c.current !== null;
  const hosted = c.pass !== null || c.passed !== null;
  const compacting = c.compaction !== null || c.compacted !== null;
  // One compaction asked per path: in idle it runs, elsewhere it is refused.
  if (!compacting && !hosted) events.push(COMPACT);
  if (s.children.compactor) {
    events.push({ type: COMPACTOR_DONE, output: { history: saved(1), replaced: 2, result: { changed: 2 } } });
    events.push({ type: COMPACTOR_ERROR, error: new Error('ENOSPC: no space left on device') });
  }
  const given = c.turn + c.queue.length;
  // The second prompt is pinned (prompt(text, { pin: true })).
  if (given < 2 && !hosted)
    events.push({
      type: EV.prompt,
      prompt: { id: `p${given + 1}`, text: `prompt ${given + 1}`, ...(given === 1 ? { pinned: true } : {}) },
    });
  // A host loop's passes: one call or one tools pass per path; tried once a prompt runs too, where it is refused.
  if (!hosted && !compacting && (!prompted || c.current !== null)) events.push(CALL, TOOLS);
  if (s.children.acceptCall) {
    events.push({
      type: ACCEPT_CALL_DONE,
      output: { history: saved(c.turn * 2 + 1), turn: c.turn + 1, opened: { text: 'hi' }, systemPrompt: 'test', tools: [] },
    });
    events.push({ type: ACCEPT_CALL_ERROR, error: new Error('ENOSPC: no space left on device') });
  }
  if (c.modelWrites < 1) events.push({ type: EV.memoryWritten, health: real });
  if (s.children.accept) {
    events.push({ type: ACCEPT_DONE, output: { history: saved(c.turn * 2 - 1) } });
    events.push({ type: ACCEPT_ERROR, error: new Error('ENOSPC: no space left on device') });
  }
  if (s.children.turn) {
    events.push({ type: EV.report, event: REPORT });
  }
  if (s.children.turn) {
    for (const status of ['done', 'aborted', 'failed'] as const) events.push({ type: TURN_DONE, output: turnOutput(s, status) });
    // A host loop's call that ends with tool calls for the host to run: the turn goes on.
    if (c.pass?.kind === 'call') events.push({ type: TURN_DONE, output: turnOutput(s, 'done', 1) });
    // The first turn of a plain path (no mode change, memory write, queue) ends with a long history: the background world.
    const plain = c.mode === 'phase1' && c.pinned === null && c.modelWrites === 0 && c.queue.length === 0 && !c.abortRequested;
    if (c.turn === 1 && !hosted && plain) events.push({ type: TURN_DONE, output: { ...turnOutput(s, 'done'), history: LONG, base: BASE } });
  }
  if (s.children.save) {
    events.push({ type: SAVE_DONE, output: { history: saved(c.turn * 2 + 1) } });
    // Mostly the history the turn ended with, the very same view (marked: a node of its own in the paths).
    events.push({ type: SAVE_DONE, output: { history: c.history }, sameHistory: true });
    events.push({ type: SAVE_ERROR, error: new Error('EACCES: permission denied') });
  }
  return events;
}

/**
 * Once a turn has ended with LONG (and the prompt base is known), the background region runs
 * beside the turns: a second prompt and its turn, which keeps the history growing, or
 * compacts it itself (the model's compact_history), or swaps the prepared summary in; the
 * summary finished, failed, and tried again. The other events are the other worlds' (mode
 * changes and aborts do nothing here the plain world does not show).
 */
function backgroundWorld(s: Snap): Step[] {
  const c = s.context;
  const events: Step[] = [];
  const from = (s.value as { background: string }).background;
  if (c.turn + c.queue.length < 2) events.push({ type: EV.prompt, prompt: { id: 'p2', text: 'prompt 2', pinned: true } });
  if (s.children.accept) events.push({ type: ACCEPT_DONE, output: { history: c.history === LONG ? LONG_PLUS : saved(c.turn * 2 - 1) } });
  if (s.children.turn) {
    // The history goes on growing; the model compacts its own history; the turn swaps the prepared summary in.
    events.push({ type: TURN_DONE, output: { ...turnOutput(s, 'done'), history: c.history, base: BASE } });
    events.push({ type: TURN_DONE, output: { ...turnOutput(s, 'done'), history: COMPACTED, base: BASE }, from });
    if (c.background.ready)
      events.push({
        type: TURN_DONE,
        output: { ...turnOutput(s, 'done'), history: COMPACTED, base: BASE, preparedUsed: true },
        from: 'used',
      });
  }
  if (s.children.save) events.push({ type: SAVE_DONE, output: { history: c.history }, sameHistory: true });
  if (s.children.background) {
    events.push({ type: BACKGROUND_DONE, output: { ...c.background.order!, summary: 'the gist', usage: PREPARED.usage, ms: 2_000 } });
    if (c.background.failures < 1)
      events.push({
        type: BACKGROUND_ERROR,
        error: Object.assign(new Error('the background summary failed: the summarizer is down'), { ms: 1_500 }),
      });
  }
  if (s.matches({ background: 'resting' })) events.push({ type: BACKGROUND_RETRY });
  return events;
}

const stateOf = (s: Snap) =>
  JSON.stringify({
    value: s.value,
    turn: s.context.turn,
    queue: s.context.queue.map((p) => p.id),
    current: s.context.current?.id ?? null,
    abort: s.context.abortRequested,
    mode: s.context.mode,
    pinned: s.context.pinned,
    writes: s.context.modelWrites,
    force: s.context.tracker.forceNext,
    last: s.context.last?.status ?? null,
    compacted: s.context.compacted ? ('error' in s.context.compacted ? 'error' : 'done') : null,
    pass: s.context.pass?.id ?? null,
    passed: s.context.passed ? `${s.context.passed.id}:${s.context.passed.error ?? s.context.passed.output?.status}` : null,
    history:
      s.context.history === LONG ? 'long' : s.context.history === LONG_PLUS ? 'long+' : s.context.history === COMPACTED ? 'compacted' : '',
    background: [s.context.background.order?.turns ?? '', s.context.background.ready?.turns ?? '', s.context.background.failures],
  });

// ---------------------------------------------------------------------------------------
// The reference model: what the session should show outward, step by step.

type Phase = 'idle' | 'accepting' | 'running' | 'saving' | 'compacting' | 'acceptingCall';
interface Expected {
  phase: Phase;
  turn: number;
  queue: QueuedPrompt[];
  current: QueuedPrompt | null;
  abortRequested: boolean;
  mode: HistoryMode;
  pinned: HistoryMode | null;
  modelWrites: number;
  forceNext: boolean;
  history: number;
  last: TurnOutput | null;
  /** How the user's compaction ended: its result's changed count, or its error. */
  compacted: { changed: number } | { error: string } | null;
  /** A host loop's pass in progress, and how the last one ended. */
  pass: { id: string; kind: 'call' | 'tools' } | null;
  passed: string | null;
  /** The background region: its state, the turns in progress and ready, the failures in a row. */
  background: { status: 'waiting' | 'summarizing' | 'ready' | 'resting'; order: string | null; ready: string | null; failures: number };
  emitted: SessionEvent[];
  told: string[];
  persisted: string[];
  accepted: QueuedPrompt[];
}

function expectedAfter(steps: Step[]): Expected {
  const m: Expected = {
    phase: 'idle',
    turn: input.lastTurn,
    queue: [],
    current: null,
    abortRequested: false,
    mode: input.mode,
    pinned: input.pinned,
    modelWrites: input.modelWrites,
    forceNext: false,
    history: 0,
    last: null,
    compacted: null,
    pass: null,
    passed: null,
    background: { status: 'waiting', order: null, ready: null, failures: 0 },
    emitted: [],
    told: [],
    persisted: [],
    accepted: [],
  };
  // The history as a view (the background's summary covers LONG and LONG_PLUS only) and whether the prompt base is known.
  let view: HistoryView = input.history;
  let base = false;
  const bg = m.background;
  const running = (): void => {
    m.phase = 'running';
    if (bg.ready) m.told.push(`turn:prepared ${bg.ready}`);
  };
  /** What the background region does once the step's history is known: drop what no longer covers it, start what is due. */
  const backgroundCheck = (): void => {
    if (bg.status === 'summarizing' && !covers(view)) {
      m.emitted.push({ type: 'background_end', turn: m.turn, status: 'superseded' });
      bg.status = 'waiting';
      bg.order = null;
    }
    if (bg.status === 'ready' && bg.ready === null) bg.status = 'waiting';
    if (bg.status === 'ready' && !covers(view)) {
      m.emitted.push({ type: 'background_dropped', turn: m.turn, turns: bg.ready! });
      bg.status = 'waiting';
      bg.ready = null;
    }
    if (bg.status === 'waiting' && base && covers(view)) {
      bg.status = 'summarizing';
      bg.order = ORDER.turns;
      m.emitted.push({ type: 'background_start', turn: m.turn, turns: ORDER.turns, messages: ORDER.items.length, tokens: ORDER.tokens });
    }
  };
  const startNext = (): void => {
    if (m.phase !== 'idle' || m.queue.length === 0) return;
    m.current = m.queue.shift()!;
    m.turn += 1;
    m.abortRequested = false;
    m.phase = 'accepting';
    m.accepted.push(m.current);
    m.emitted.push({ type: 'turn_start', turn: m.turn, promptId: m.current.id, text: m.current.text });
  };
  const turnEnd = (): void => {
    const last = m.last!;
    // A host loop's pass: its turn ends with an answer that leaves no tools to run (or a failure); a tools pass ends none.
    const pass = m.pass;
    m.pass = null;
    if (pass) m.passed = `${pass.id}:${last.status}`;
    if (pass && (pass.kind === 'tools' || (last.toolCalls > 0 && last.status === 'done'))) return;
    m.emitted.push({
      type: 'turn_end',
      turn: m.turn,
      promptId: m.current!.id,
      status: last.status,
      text: last.text,
      requests: last.requests,
      ...(last.error ? { error: last.error } : {}),
    });
  };
  for (const e of steps) {
    switch (e.type) {
      case EV.prompt:
        m.queue.push(e.prompt as QueuedPrompt);
        break;
      case EV.abort:
        for (const p of m.queue) m.emitted.push({ type: 'prompt_dropped', promptId: p.id, text: p.text });
        m.queue = [];
        if (m.phase === 'accepting') m.abortRequested = true;
        if (m.phase === 'running') m.told.push(`turn:${EV.turnAbort}`);
        break;
      case EV.setMode:
        m.told.push(e.mode === 'auto' ? `historyMode:${EV.unpin}` : `historyMode:${EV.pin} ${String(e.mode)}`);
        break;
      case EV.mode: {
        const mode = e.mode as HistoryMode;
        const pinned = e.pinned ? mode : null;
        if (mode !== m.mode) m.emitted.push({ type: 'mode_changed', from: m.mode, to: mode, pinned: e.pinned as boolean });
        if (mode !== m.mode || pinned !== m.pinned) m.persisted.push(`${m.mode}→${mode} pinned ${pinned}`);
        m.mode = mode;
        m.pinned = pinned;
        if (m.phase === 'running') m.told.push(`turn:${EV.turnMode} ${mode}`);
        break;
      }
      case EV.compact:
        if (m.phase === 'idle') m.phase = 'compacting';
        else m.compacted = { error: REFUSED };
        break;
      case 'call':
      case 'tools': {
        const id = e.type === 'call' ? (e.call as { id: string }).id : (e.id as string);
        if (m.phase !== 'idle') m.passed = `${id}:${BUSY}`;
        else {
          m.pass = { id, kind: e.type };
          if (e.type === 'call') m.phase = 'acceptingCall';
          else running();
        }
        break;
      }
      case ACCEPT_CALL_DONE: {
        const output = e.output as { history: HistoryView; turn: number; opened: { text: string } | null };
        m.history = output.history.items.length;
        view = output.history;
        m.turn = output.turn;
        if (output.opened) {
          m.current = { id: m.pass!.id, text: output.opened.text };
          m.emitted.push({ type: 'turn_start', turn: m.turn, promptId: m.pass!.id, text: output.opened.text });
        }
        running();
        break;
      }
      case ACCEPT_CALL_ERROR: {
        const message = (e.error as Error).message;
        m.emitted.push({
          type: 'error',
          turn: m.turn,
          error: { kind: 'storage', message: `the call's messages were not saved: ${message}`, retryable: false },
          fatal: true,
        });
        m.passed = `${m.pass!.id}:${message}`;
        m.pass = null;
        m.phase = 'idle';
        break;
      }
      case COMPACTOR_DONE:
        m.history = 1;
        view = (e.output as { history: HistoryView }).history;
        m.forceNext = true; // something was compacted: the next request reminds
        m.compacted = { changed: 2 };
        m.phase = 'idle';
        break;
      case COMPACTOR_ERROR:
        m.compacted = { error: (e.error as Error).message };
        m.phase = 'idle';
        break;
      case EV.report:
        m.emitted.push(e.event as SessionEvent);
        break;
      case EV.memoryWritten:
        if (m.phase !== 'running') break; // only a running turn writes memory
        m.modelWrites += 1;
        m.told.push(`historyMode:${EV.evaluate}`);
        break;
      case ACCEPT_DONE: {
        view = (e.output as { history: HistoryView }).history;
        m.history = view.items.length;
        if (m.abortRequested) {
          m.phase = 'saving';
          m.last = { status: 'aborted', text: '', error: null, requests: 0 } as TurnOutput;
        } else running();
        break;
      }
      case ACCEPT_ERROR: {
        const message = (e.error as Error).message;
        m.emitted.push({
          type: 'error',
          turn: m.turn,
          error: {
            kind: 'storage',
            message: `your message was not saved: ${message}. Nothing was sent to the model; send it again once that is fixed.`,
            retryable: false,
          },
          fatal: true,
        });
        m.emitted.push({
          type: 'turn_end',
          turn: m.turn,
          promptId: m.current!.id,
          status: 'failed',
          text: '',
          requests: 0,
          error: { kind: 'storage', message, retryable: false },
        });
        m.turn -= 1;
        m.current = null;
        m.phase = 'idle';
        break;
      }
      case TURN_DONE: {
        const output = e.output as TurnOutput;
        m.last = output;
        m.history = output.history.items.length;
        view = output.history;
        base = output.base !== null;
        if (output.preparedUsed) bg.ready = null;
        m.forceNext = output.tracker.forceNext;
        m.phase = 'saving';
        break;
      }
      case SAVE_DONE:
        view = (e.output as { history: HistoryView }).history;
        m.history = view.items.length;
        turnEnd();
        m.phase = 'idle';
        break;
      case SAVE_ERROR:
        m.emitted.push({
          type: 'error',
          turn: m.turn,
          error: {
            kind: 'storage',
            message: `the session state was not saved: ${(e.error as Error).message}. The conversation is in messages.jsonl; the state is rebuilt from it when the session is opened again.`,
            retryable: false,
          },
          fatal: false,
        });
        turnEnd();
        m.phase = 'idle';
        break;
      case BACKGROUND_DONE:
        bg.status = 'ready';
        bg.ready = bg.order;
        bg.order = null;
        bg.failures = 0;
        m.emitted.push({ type: 'background_end', turn: m.turn, status: 'ready', ms: 2_000, usage: PREPARED.usage! });
        // A turn running when it is ready is told; the next turn is given it.
        if (m.phase === 'running') m.told.push('turn:summary.ready');
        break;
      case BACKGROUND_ERROR:
        m.emitted.push({
          type: 'background_end',
          turn: m.turn,
          status: 'failed',
          ms: 1_500,
          error: { kind: 'internal', message: 'the background summary failed: the summarizer is down', retryable: true },
        });
        bg.status = 'resting';
        bg.order = null;
        bg.failures += 1;
        break;
      case BACKGROUND_RETRY:
        bg.status = 'waiting';
        break;
    }
    backgroundCheck();
    startNext();
  }
  return m;
}

/** Replays `paths` and checks every one against the reference model. */
function runChecked(paths: StatePath<Snap, Step>[], run?: PathRun): PathRun {
  return runPaths(
    machine,
    paths,
    {
      input,
      serialize: stateOf as never,
      watch: (actor: AnyActor, path) => {
        const emitted: SessionEvent[] = [];
        told = [];
        persisted = [];
        accepted = [];
        actor.on('*', (e) => emitted.push(e as SessionEvent));
        return () => {
          const steps = path.steps.map((s) => s.event as Step).filter((e) => e.type !== 'xstate.init');
          const want = expectedAfter(steps);
          const s = actor.getSnapshot() as Snap;
          const what = `after ${steps.map((e) => e.type).join(', ') || 'nothing'}`;
          expect(emitted, what).toEqual(want.emitted);
          expect(told, what).toEqual(want.told);
          expect(persisted, what).toEqual(want.persisted);
          expect(accepted, what).toEqual(want.accepted);
          expect(
            {
              phase: (s.value as { turns: string }).turns,
              background: {
                status: (s.value as { background: string }).background,
                order: s.context.background.order?.turns ?? null,
                ready: s.context.background.ready?.turns ?? null,
                failures: s.context.background.failures,
              },
              turn: s.context.turn,
              queue: s.context.queue,
              current: s.context.current?.id ?? null,
              abortRequested: s.context.abortRequested,
              mode: s.context.mode,
              pinned: s.context.pinned,
              modelWrites: s.context.modelWrites,
              forceNext: s.context.tracker.forceNext,
              history: s.context.history.items.length,
              last: s.context.last?.status ?? null,
              compacted: s.context.compacted
                ? 'error' in s.context.compacted
                  ? { error: s.context.compacted.error }
                  : { changed: s.context.compacted.result.changed }
                : null,
              pass: s.context.pass ? { id: s.context.pass.id, kind: s.context.pass.kind } : null,
              passed: s.context.passed ? `${s.context.passed.id}:${s.context.passed.error ?? s.context.passed.output?.status}` : null,
            },
            what,
          ).toEqual({
            phase: want.phase,
            background: want.background,
            turn: want.turn,
            queue: want.queue,
            current: want.current?.id ?? null,
            abortRequested: want.abortRequested,
            mode: want.mode,
            pinned: want.pinned,
            modelWrites: want.modelWrites,
            forceNext: want.forceNext,
            history: want.history,
            last: want.last?.status ?? null,
            compacted: want.compacted,
            pass: want.pass,
            passed: want.passed,
          });
        };
      },
    },
    run,
  );
}

/** One path of the graph by its events, for the scenarios named below. */
function pathOf(events: Step[]): StatePath<Snap, Step> {
  const actor = createActor(machine, { input }).start();
  const steps = [{ state: actor.getSnapshot(), event: { type: 'xstate.init' } as Step }];
  for (const event of events) {
    actor.send(event as never);
    steps.push({ state: actor.getSnapshot(), event });
  }
  actor.stop();
  return { state: steps.at(-1)!.state, steps, weight: steps.length } as StatePath<Snap, Step>;
}

const path0 = createActor(machine, { input }).getSnapshot();
const prompt = (n: number): Step => ({ type: EV.prompt, prompt: { id: `p${n}`, text: `prompt ${n}` } });
const acceptDone = (historyItems: number): Step => ({ type: ACCEPT_DONE, output: { history: saved(historyItems) } });

describe('session machine, model-based', () => {
  // Each (state, event) pair is its own node, so the shortest paths take every transition,
  // the ones that leave the state as it was (ABORT in idle, SET_MODE, …) included.
  const paths = getShortestPaths(machine, {
    input,
    events: eventsIn as never,
    // A TURN_DONE of the background world names the region's state it came from (a node of its own: dropped, superseded, used).
    serializeState: ((s: Snap, e: Step | undefined) =>
      `${stateOf(s)}|${e?.type ?? ''}${e && 'sameHistory' in e ? '=' : ''}${e && 'from' in e ? `<${String(e.from)}` : ''}`) as never,
  }) as unknown as StatePath<Snap, Step>[];

  it('every path behaves as the reference model says, and every state and transition is taken', () => {
    expect(paths.length).toBeGreaterThan(50);
    const run = runChecked(paths);
    const states = allStateIds(machine);
    expect(states.filter((id) => !run.visited.has(id))).toEqual([]);
    const missed = [...allTransitions(machine)].filter(([t]) => !run.fired.has(t)).map(([, name]) => name);
    expect(missed).toEqual([]);
    // What was covered is the machine's own set, read from its definition, not a list kept here.
    expect([...run.visited].filter((id) => !states.includes(id))).toEqual([]);
    expect(run.fired.size).toBe(allTransitions(machine).size);
  }); // replaying every path is CPU-bound: seconds alone, much more on a loaded machine

  it('a prompt sent in each state waits its turn', () => {
    const inAccepting = paths.find((p) =>
      p.steps.some((s, i) => i > 0 && s.event.type === EV.prompt && p.steps[i - 1]!.state.matches({ turns: 'accepting' })),
    );
    const inRunning = paths.find((p) =>
      p.steps.some((s, i) => i > 0 && s.event.type === EV.prompt && p.steps[i - 1]!.state.matches({ turns: 'running' })),
    );
    const inSaving = paths.find((p) =>
      p.steps.some((s, i) => i > 0 && s.event.type === EV.prompt && p.steps[i - 1]!.state.matches({ turns: 'saving' })),
    );
    expect([inAccepting, inRunning, inSaving].every(Boolean)).toBe(true);
    // Queued behind a running turn, the next prompt starts as soon as the first is saved.
    const path = pathOf([prompt(1), acceptDone(1), prompt(2), { type: TURN_DONE, output: turnOutput(path0, 'done') }]);
    runChecked([path]);
    expect(path.state.matches({ turns: 'saving' })).toBe(true);
    expect(path.state.context.queue.map((p) => p.id)).toEqual(['p2']);
    const next = pathOf([
      prompt(1),
      acceptDone(1),
      prompt(2),
      { type: TURN_DONE, output: turnOutput(path0, 'done') },
      { type: SAVE_DONE, output: { history: saved(3) } },
    ]);
    runChecked([next]);
    expect(next.state.matches({ turns: 'accepting' })).toBe(true);
    expect(next.state.context).toMatchObject({ turn: 2, current: { id: 'p2' }, queue: [] });
  });

  it('ABORT during accept drops the queue, skips the model and saves an aborted turn', () => {
    const path = pathOf([prompt(1), prompt(2), { type: EV.abort }, acceptDone(1), { type: SAVE_DONE, output: { history: saved(1) } }]);
    runChecked([path]);
    expect(
      expectedAfter(path.steps.slice(1).map((s) => s.event)).emitted.map((e) => (e.type === 'turn_end' ? `turn_end ${e.status}` : e.type)),
    ).toEqual(['turn_start', 'prompt_dropped', 'turn_end aborted']);
    expect(path.state.context).toMatchObject({ turn: 1, queue: [], abortRequested: true });
    expect(path.steps.some((s) => s.state.matches({ turns: 'running' }))).toBe(false);
  });

  it('a failed accept frees the turn number; a failed save still ends the turn', () => {
    const failedAccept = pathOf([prompt(1), { type: ACCEPT_ERROR, error: new Error('ENOSPC') }, prompt(2)]);
    runChecked([failedAccept]);
    expect(failedAccept.state.context).toMatchObject({ turn: 1, current: { id: 'p2' } });
    const failedSave = pathOf([
      prompt(1),
      acceptDone(1),
      { type: TURN_DONE, output: turnOutput(path0, 'done') },
      { type: SAVE_ERROR, error: new Error('EACCES') },
    ]);
    runChecked([failedSave]);
    expect(failedSave.state.matches({ turns: 'idle' })).toBe(true);
    expect(failedSave.state.context.turn).toBe(1);
  });

  it('round 3 new user: each mode save is a child of its own, so stopping the session stops them all (no event to a stopped actor)', async () => {
    let resolve: () => void = () => {};
    const slow = fromPromise<void, PersistModeInput>(() => new Promise<void>((r) => (resolve = r)));
    const actor = createActor(sessionMachine.provide({ actors: { ...machine.implementations.actors, persistMode: slow } as never }), {
      input,
    }).start();
    actor.send({ type: EV.mode, mode: 'phase2', pinned: true } as never);
    actor.send({ type: EV.mode, mode: 'phase2', pinned: false } as never);
    const saves = Object.entries(actor.getSnapshot().children).filter(([, child]) => child?.src === 'persistMode');
    expect(saves.map(([id]) => id)).toEqual(['persistMode.0', 'persistMode.1']);
    actor.stop();
    expect(saves.map(([, child]) => child!.getSnapshot().status)).toEqual(['stopped', 'stopped']);
    resolve(); // the last save finishing after the stop reports to no one
    await new Promise((r) => setTimeout(r, 10));
  });

  it('a compaction between turns makes the next request remind, and is refused while a turn runs; a memory write asks historyMode to re-evaluate', () => {
    const compacted = pathOf([
      COMPACT,
      prompt(1),
      { type: COMPACTOR_DONE, output: { history: saved(1), replaced: 2, result: { changed: 2 } } },
    ]);
    runChecked([compacted]);
    expect(compacted.state.context.tracker).toEqual({ ...INITIAL_TRACKER, forceNext: true });
    // The prompt sent while it ran waited for it.
    expect(compacted.state.matches({ turns: 'accepting' })).toBe(true);
    const refused = pathOf([prompt(1), COMPACT]);
    runChecked([refused]);
    expect(refused.state.context.compacted).toEqual({ id: 'k1', error: REFUSED });
    const wrote = pathOf([
      prompt(1),
      acceptDone(1),
      { type: EV.memoryWritten, health: real },
      { type: EV.mode, mode: 'phase2', pinned: false },
    ]);
    runChecked([wrote]); // the model says: historyMode:EVALUATE, then turn:MODE_CHANGED phase2 and mode_changed
    expect(wrote.state.context).toMatchObject({ modelWrites: 1, health: real, mode: 'phase2', pinned: null });
  });

  describe('background compaction (the background region)', () => {
    const long = (): Step => ({ type: TURN_DONE, output: { ...turnOutput(path0, 'done'), history: LONG, base: BASE } });
    const saveSame = (history: HistoryView): Step => ({ type: SAVE_DONE, output: { history }, sameHistory: true });
    const ready: Step = { type: BACKGROUND_DONE, output: PREPARED };
    const turnWith = (history: HistoryView, preparedUsed = false): Step => ({
      type: TURN_DONE,
      output: { ...turnOutput(path0, 'done'), history, base: BASE, ...(preparedUsed ? { preparedUsed: true } : {}) },
    });
    const startedThen = [prompt(1), acceptDone(1), long()];

    it('plans what the fallback will archive: the oldest whole turns holding a third of the threshold', () => {
      // 2,000 tokens, fallback at 1,500: it keeps 1,000, so it sheds 500; LONG's oldest three turns hold 600.
      expect({ turns: ORDER.turns, messages: ORDER.items.length, tokens: ORDER.tokens }).toEqual({
        turns: '1-3',
        messages: 6,
        tokens: 600,
      });
      expect(ORDER_PHASE2.turns).toBe('2-4');
      // Below the background threshold (60 %: 200 + 2 turns of 200 + 400 for the tail < 1,200), nothing is due.
      expect(
        backgroundOrder({
          history: fromItems(LONG.items.slice(0, 4)),
          mode: 'phase1',
          turn: 1,
          base: BASE,
          calibration: 0,
          statics: { settings: SETTINGS },
        }),
      ).toBeNull();
      expect(
        backgroundOrder({
          history: LONG,
          mode: 'phase1',
          turn: 1,
          base: BASE,
          calibration: 0,
          statics: { settings: { ...SETTINGS, backgroundThreshold: null } },
        }),
      ).toBeNull();
    });

    it('finished before the boundary: the next turn is given the summary (and swaps it in)', () => {
      const path = pathOf([...startedThen, ready, saveSame(LONG), prompt(2), { type: ACCEPT_DONE, output: { history: LONG_PLUS } }]);
      runChecked([path]);
      expect(path.state.value).toEqual({ turns: 'running', background: 'ready' });
      const swapped = pathOf([...path.steps.slice(1).map((s) => s.event), turnWith(COMPACTED, true), saveSame(COMPACTED)]);
      runChecked([swapped]);
      expect(swapped.state.value).toEqual({ turns: 'idle', background: 'waiting' });
      expect(swapped.state.context.background).toEqual({ order: null, ready: null, failures: 0 });
      expect(expectedAfter(swapped.steps.slice(1).map((s) => s.event)).told).toEqual(['turn:prepared 1-3']);
    });

    it('finished after the boundary: the running turn is told at once', () => {
      const path = pathOf([...startedThen, saveSame(LONG), prompt(2), { type: ACCEPT_DONE, output: { history: LONG_PLUS } }, ready]);
      runChecked([path]);
      expect(expectedAfter(path.steps.slice(1).map((s) => s.event)).told).toEqual(['turn:summary.ready']);
      expect(path.state.context.background.ready?.turns).toBe('1-3');
    });

    it('failed: reported, no turn fails, and it is tried again after the retry delay', () => {
      const failed = {
        type: BACKGROUND_ERROR,
        error: Object.assign(new Error('the background summary failed: the summarizer is down'), { ms: 1_500 }),
      };
      const path = pathOf([...startedThen, failed, saveSame(LONG), { type: BACKGROUND_RETRY }]);
      runChecked([path]);
      const emitted = expectedAfter(path.steps.slice(1).map((s) => s.event)).emitted.map((e) =>
        e.type === 'background_end' ? `${e.type} ${e.status}` : e.type,
      );
      expect(emitted).toEqual(['turn_start', 'background_start', 'background_end failed', 'turn_end', 'background_start']);
      expect(path.state.value).toEqual({ turns: 'idle', background: 'summarizing' });
      expect(path.state.context.background.failures).toBe(1);
    });

    it("superseded by the model's own compaction: dropped when ready, stopped when still running", () => {
      const whenReady = pathOf([
        ...startedThen,
        ready,
        saveSame(LONG),
        prompt(2),
        { type: ACCEPT_DONE, output: { history: LONG_PLUS } },
        turnWith(COMPACTED),
      ]);
      runChecked([whenReady]);
      expect(expectedAfter(whenReady.steps.slice(1).map((s) => s.event)).emitted.at(-1)).toEqual({
        type: 'background_dropped',
        turn: 2,
        turns: '1-3',
      });
      const inFlight = pathOf([
        ...startedThen,
        saveSame(LONG),
        prompt(2),
        { type: ACCEPT_DONE, output: { history: LONG_PLUS } },
        turnWith(COMPACTED),
      ]);
      runChecked([inFlight]);
      expect(expectedAfter(inFlight.steps.slice(1).map((s) => s.event)).emitted.at(-1)).toEqual({
        type: 'background_end',
        turn: 2,
        status: 'superseded',
      });
      expect(inFlight.state.value).toEqual({ turns: 'saving', background: 'waiting' });
    });

    it('the session closed while it runs: the summary is stopped (its signal aborted), and nothing is reported after', async () => {
      let signal: AbortSignal | null = null;
      const summarizing = fromPromise(({ signal: s }) => {
        signal = s;
        return new Promise<never>(() => {});
      });
      const actor = createActor(
        sessionMachine.provide({ actors: { ...machine.implementations.actors, backgroundSummary: summarizing } as never }),
        {
          input,
        },
      ).start();
      const emitted: string[] = [];
      actor.on('*', (e) => emitted.push(e.type));
      for (const step of startedThen) actor.send(step as never);
      expect(actor.getSnapshot().value).toEqual({ turns: 'saving', background: 'summarizing' });
      expect(emitted).toEqual(['turn_start', 'background_start']);
      actor.stop();
      expect(signal!.aborted).toBe(true);
      await new Promise((r) => setTimeout(r, 10));
      expect(emitted).toEqual(['turn_start', 'background_start']);
    });
  });
});
