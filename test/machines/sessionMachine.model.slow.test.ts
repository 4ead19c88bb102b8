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
import { fromItems, type HistoryMode, type HistoryView } from '../../src/history/historyView.js';
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

/** What the fake children were told, in order: `turn:ABORT`, `historyMode:PIN phase2`… */
let told: string[] = [];
const listener = (child: string) =>
  setup({}).createMachine({
    id: child,
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

const input: SessionInput = {
  statics: { sessionId: 's', systemPrompt: 'test', tools: [], counter: {} as never, settings: {} as never },
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
  }
  if (s.children.save) {
    events.push({ type: SAVE_DONE, output: { history: saved(c.turn * 2 + 1) } });
    // Mostly the history the turn ended with, the very same view (marked: a node of its own in the paths).
    events.push({ type: SAVE_DONE, output: { history: c.history }, sameHistory: true });
    events.push({ type: SAVE_ERROR, error: new Error('EACCES: permission denied') });
  }
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
    emitted: [],
    told: [],
    persisted: [],
    accepted: [],
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
          m.phase = e.type === 'call' ? 'acceptingCall' : 'running';
        }
        break;
      }
      case ACCEPT_CALL_DONE: {
        const output = e.output as { history: HistoryView; turn: number; opened: { text: string } | null };
        m.history = output.history.items.length;
        m.turn = output.turn;
        if (output.opened) {
          m.current = { id: m.pass!.id, text: output.opened.text };
          m.emitted.push({ type: 'turn_start', turn: m.turn, promptId: m.pass!.id, text: output.opened.text });
        }
        m.phase = 'running';
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
        m.history = (e.output as { history: HistoryView }).history.items.length;
        if (m.abortRequested) {
          m.phase = 'saving';
          m.last = { status: 'aborted', text: '', error: null, requests: 0 } as TurnOutput;
        } else m.phase = 'running';
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
        m.forceNext = output.tracker.forceNext;
        m.phase = 'saving';
        break;
      }
      case SAVE_DONE:
        m.history = (e.output as { history: HistoryView }).history.items.length;
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
    }
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
              phase: s.value,
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
    serializeState: ((s: Snap, e: Step | undefined) => `${stateOf(s)}|${e?.type ?? ''}${e && 'sameHistory' in e ? '=' : ''}`) as never,
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
      p.steps.some((s, i) => i > 0 && s.event.type === EV.prompt && p.steps[i - 1]!.state.matches('accepting')),
    );
    const inRunning = paths.find((p) =>
      p.steps.some((s, i) => i > 0 && s.event.type === EV.prompt && p.steps[i - 1]!.state.matches('running')),
    );
    const inSaving = paths.find((p) =>
      p.steps.some((s, i) => i > 0 && s.event.type === EV.prompt && p.steps[i - 1]!.state.matches('saving')),
    );
    expect([inAccepting, inRunning, inSaving].every(Boolean)).toBe(true);
    // Queued behind a running turn, the next prompt starts as soon as the first is saved.
    const path = pathOf([prompt(1), acceptDone(1), prompt(2), { type: TURN_DONE, output: turnOutput(path0, 'done') }]);
    runChecked([path]);
    expect(path.state.matches('saving')).toBe(true);
    expect(path.state.context.queue.map((p) => p.id)).toEqual(['p2']);
    const next = pathOf([
      prompt(1),
      acceptDone(1),
      prompt(2),
      { type: TURN_DONE, output: turnOutput(path0, 'done') },
      { type: SAVE_DONE, output: { history: saved(3) } },
    ]);
    runChecked([next]);
    expect(next.state.matches('accepting')).toBe(true);
    expect(next.state.context).toMatchObject({ turn: 2, current: { id: 'p2' }, queue: [] });
  });

  it('ABORT during accept drops the queue, skips the model and saves an aborted turn', () => {
    const path = pathOf([prompt(1), prompt(2), { type: EV.abort }, acceptDone(1), { type: SAVE_DONE, output: { history: saved(1) } }]);
    runChecked([path]);
    expect(
      expectedAfter(path.steps.slice(1).map((s) => s.event)).emitted.map((e) => (e.type === 'turn_end' ? `turn_end ${e.status}` : e.type)),
    ).toEqual(['turn_start', 'prompt_dropped', 'turn_end aborted']);
    expect(path.state.context).toMatchObject({ turn: 1, queue: [], abortRequested: true });
    expect(path.steps.some((s) => s.state.matches('running'))).toBe(false);
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
    expect(failedSave.state.matches('idle')).toBe(true);
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
    expect(compacted.state.matches('accepting')).toBe(true);
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
});
