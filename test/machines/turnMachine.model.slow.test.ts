/**
 * Model-based tests: paths generated from the machine definitions with xstate/graph
 * (shortest paths to every state, simple paths to the final states), each replayed on
 * the real machine with scripted actor outcomes. The tests fail if a state or a
 * transition of the machine is never reached.
 */
import { fromPromise, type SnapshotFrom } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { beforeAll, describe, expect, it } from 'vitest';
import { historyModeMachine, type HistoryModeInput } from '../../machines/historyModeMachine.js';
import { turnMachine, type TurnInput, type LlmOutput, type ToolRunnerOutput } from '../../machines/turnMachine.js';
import { fromItems, type HistoryView } from '../../src/history/historyView.js';
import { LLMError } from '../../src/llm/llm.js';
import { memoryHealth } from '../../src/memory/memoryTemplate.js';
import { INITIAL_TRACKER } from '../../src/memory/reminderTracker.js';
import { defaultTurnSettings } from '../../src/settings/settings.js';
import { loadTokenCounter, type TokenCounter } from '../../src/tokens/tokens.js';
import type { MemorySnapshot } from '../../src/memory/workingMemory.js';
import { allStateIds, allTransitions, eventsFor, runPaths } from './pathRunner.js';

const never = () => fromPromise(() => new Promise<never>(() => {})) as never;

function memory(version: number, words: number): MemorySnapshot {
  const content = `# Working Memory\n\n## Known facts\n${'fact '.repeat(words)}\n`;
  return { version, content, bytes: Buffer.byteLength(content), health: memoryHealth(content), detail: [] };
}

/** A turn's state as its guards see it: the value and the counters they read. */
function guardState(s: SnapshotFrom<typeof turnMachine>) {
  return {
    value: s.value,
    status: s.status,
    request: s.context.request,
    memory: s.context.memory?.version ?? 0,
    retries: s.context.attempt.retries,
    overflow: s.context.attempt.overflowRetried,
    compacted: s.context.compaction.ran,
    reason: s.context.compaction.reason,
    background: s.context.compaction.background.ready ? 'ready' : s.context.compaction.background.used ? 'used' : '',
  };
}

describe('turn machine, model-based', () => {
  let counter: TokenCounter;
  beforeAll(async () => {
    counter = await loadTokenCounter('gpt-4o');
  });

  function setupTurn(compaction: 'llm' | 'auto' = 'llm', longPast = false, host: 'call' | 'tools' | null = null, background = false) {
    // A 4000-token window: a small memory fits easily, a large one crosses the 75 % line
    // (compaction) but still fits, a huge one cannot fit at all. With the auto policy, a
    // medium memory (~45 %) reaches the compression guide's tiers, and an earlier turn is
    // there for it to compact. With a long past in phase 2, the history that is not sent
    // crosses the line (the horizon).
    const settings = {
      ...defaultTurnSettings(4000, 200),
      maxRequestsPerTurn: 2,
      retry: { maxRetries: 1, baseDelayMs: 10, maxDelayMs: 10 },
      compaction,
      keepRecentTurns: 0,
      // The long past must be what phase 2 does not send (the horizon), so the strict view.
      recentTurns: 0,
    };
    const user = { role: 'user' as const, content: 'Hello' };
    const earlier = { role: 'user' as const, content: `An earlier question: ${'background '.repeat(longPast ? 3200 : 200)}` };
    const reply = { role: 'assistant' as const, content: 'An earlier answer' };
    // Rules pinned when the session was created: every request carries them, in phase 2 before its window.
    const rules = { role: 'user' as const, content: 'Rules: be brief.' };
    const history: HistoryView = fromItems([
      { seq: 0, turn: 0, message: rules, tokens: counter.message(rules), pinned: true },
      { seq: 1, turn: 1, message: earlier, tokens: counter.message(earlier) },
      { seq: 2, turn: 1, message: reply, tokens: counter.message(reply) },
      { seq: 3, turn: 2, message: user, tokens: counter.message(user) },
    ]);
    const input: TurnInput = {
      statics: { sessionId: 's', systemPrompt: 'You are a test.', tools: [], counter, settings },
      turn: 2,
      history,
      mode: longPast ? 'phase2' : 'phase1',
      tracker: INITIAL_TRACKER,
      calibration: 0,
      base: null,
      // A host's loop: a model call's pass, or a pass that runs workmem's tools the host was asked for.
      ...(host ? { hostLoop: true } : {}),
      ...(host === 'tools' ? { calls: [{ id: 'c9', type: 'function' as const, function: { name: 'write', arguments: '{}' } }] } : {}),
    };
    // A summary the session prepared in the background: of the earlier turn, ready when the turn is told (summary.ready).
    const earlierTurn = history.items.slice(1, 3);
    const prepared = {
      turn: 1,
      items: earlierTurn,
      kept: [],
      tokens: earlierTurn.reduce((n, i) => n + i.tokens, 0),
      turns: '1',
      summary: 'the gist',
      usage: null,
      ms: 1,
    };
    const answer: LlmOutput = { history, message: { role: 'assistant', content: 'Hi' }, usage: null, finishReason: 'stop' };
    const call: LlmOutput = {
      history,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'write', arguments: '{}' } }],
      },
      usage: { promptTokens: 100, completionTokens: 5 },
      finishReason: 'tool_calls',
    };
    const wrote: ToolRunnerOutput = {
      history,
      overviewWrite: { at: 1, path: 'working-memory/overview.md', bytes: 10, memory: memory(4, 30) },
      compacted: true,
      results: [{ callId: 'c1', content: 'ok', isError: false }],
    };
    const events = [
      { type: 'xstate.done.actor.memoryStore', output: memory(1, 10) },
      { type: 'xstate.done.actor.memoryStore', output: memory(2, 2900) },
      { type: 'xstate.done.actor.memoryStore', output: memory(3, 3900) },
      ...(compaction === 'auto' ? [{ type: 'xstate.done.actor.memoryStore', output: memory(5, 1500) }] : []),
      { type: 'xstate.error.actor.memoryStore', error: new Error('EACCES: permission denied') },
      { type: 'xstate.done.actor.compactor', output: { history, replaced: 2, files: ['x.md'], tokensBefore: 3400, tokensAfter: 3300 } },
      { type: 'xstate.error.actor.compactor', error: new Error('ENOSPC') },
      { type: 'xstate.done.actor.llm', output: answer },
      { type: 'xstate.done.actor.llm', output: call },
      { type: 'xstate.error.actor.llm', error: new LLMError('overflow', 'context_length_exceeded') },
      { type: 'xstate.error.actor.llm', error: new LLMError('rate_limit', '429', { status: 429, retryAfterMs: 10 }) },
      { type: 'xstate.error.actor.llm', error: new LLMError('auth', '401', { status: 401 }) },
      { type: 'xstate.after.retryBackoff.turn.retryWait' },
      { type: 'xstate.done.actor.toolRunner', output: { history, overviewWrite: null, compacted: false, results: [] } },
      { type: 'xstate.done.actor.toolRunner', output: wrote },
      { type: 'xstate.error.actor.toolRunner', error: new Error('ENOSPC') },
      { type: 'mode.changed', mode: 'phase2' },
      { type: 'abort' },
      ...(background ? [{ type: 'summary.ready', prepared }] : []),
    ] as const;
    const serialize = (s: SnapshotFrom<typeof turnMachine>) =>
      JSON.stringify({ ...guardState(s), mode: s.context.mode, rounds: s.context.tracker.rounds, force: s.context.tracker.forceNext });
    const machine = turnMachine.provide({
      actors: { memoryStore: never(), compactor: never(), llm: never(), toolRunner: never() },
    });
    const rawEvents = events as unknown as { type: string }[];
    return { machine, input, events: eventsFor(rawEvents as never[]), rawEvents: rawEvents as never[], serialize };
  }

  it('shortest paths reach every state; with the simple paths to the final states every transition fires', () => {
    const { machine, input, events, rawEvents, serialize } = setupTurn();
    const shortest = getShortestPaths(machine, { input, events, serializeState: serialize as never });
    const run = runPaths(machine, shortest, { input, serialize: serialize as never });
    // The same machine with the "auto" compaction policy reaches its own transition.
    const auto = setupTurn('auto');
    runPaths(
      machine,
      getShortestPaths(machine, { input: auto.input, events: auto.events, serializeState: serialize as never }),
      { input: auto.input, serialize: serialize as never },
      run,
    );
    // And with a long past in phase 2, the horizon's.
    const past = setupTurn('llm', true);
    const pastPaths = getShortestPaths(machine, { input: past.input, events: past.events, serializeState: serialize as never });
    runPaths(machine, pastPaths, { input: past.input, serialize: serialize as never }, run);
    // Every request built on those paths sends the pinned rules first, though phase 2 carries only the active turn.
    const built = pastPaths.flatMap((p) => p.steps.flatMap((s) => (s.state.context.prompt ? [s.state.context.prompt] : [])));
    expect(built.length).toBeGreaterThan(0);
    for (const prompt of built) {
      expect(prompt.pinned).toEqual([0]);
      expect(prompt.messages[1]).toEqual({ role: 'user', content: 'Rules: be brief.' });
    }
    // And a summary prepared in the background, made ready while the turn runs: the fallback swaps it in.
    const prepared = setupTurn('llm', false, null, true);
    const preparedPaths = getShortestPaths(machine, { input: prepared.input, events: prepared.events, serializeState: serialize as never });
    runPaths(machine, preparedPaths, { input: prepared.input, serialize: serialize as never }, run);
    const swapped = preparedPaths.find((p) => p.state.context.compaction.background.used && p.state.value === 'done');
    expect(swapped, 'a path where the prepared summary was swapped in and the turn answered').toBeDefined();
    // The background compaction ran as the compactor's order: the prepared summary, nothing else.
    const order = swapped!.steps.find((s) => s.state.matches('compacting') && s.state.context.compaction.reason === 'background')!.state;
    expect(order.context.compaction.background.ready?.turns).toBe('1');
    // And a host's loop: its model calls' passes and its tools passes.
    for (const host of ['call', 'tools'] as const) {
      const hosted = setupTurn('llm', false, host);
      runPaths(
        machine,
        getShortestPaths(machine, { input: hosted.input, events: hosted.events, serializeState: serialize as never }),
        { input: hosted.input, serialize: serialize as never },
        run,
      );
    }
    const states = allStateIds(machine);
    expect(states.filter((id) => !run.visited.has(id))).toEqual([]);
    expect(states).toEqual(
      expect.arrayContaining([
        'turn.loadMemory',
        'turn.checkReminder',
        'turn.maybeCompact',
        'turn.compacting',
        'turn.buildPrompt',
        'turn.stream',
        'turn.runTools',
        'turn.markUpdated',
        'turn.done',
        'turn.failed',
        'turn.aborted',
      ]),
    );

    // Simple paths explode with every context detail in the state's identity: for them a
    // state is its value and the counters the guards read, and the alphabet leaves out
    // what the shortest paths above already cover (mode.changed, the oversized memories).
    const lean = (s: SnapshotFrom<typeof turnMachine>) => JSON.stringify(guardState(s));
    const toFinal = getSimplePaths(machine, {
      input,
      events: eventsFor(
        (rawEvents as { type: string; output?: { version?: number } }[]).filter(
          (e) => e.type !== 'mode.changed' && !(e.output?.version! > 1),
        ) as never[],
      ),
      serializeState: lean as never,
      toState: (s) => s.status === 'done',
    }).filter((p) => p.state.status === 'done');
    runPaths(machine, toFinal, { input, serialize: lean as never }, run);

    const transitions = allTransitions(machine);
    const missed = [...transitions].filter(([t]) => !run.fired.has(t)).map(([, name]) => name);
    expect(missed).toEqual([]);
    expect([...transitions.values()]).toEqual(
      expect.arrayContaining([
        'turn.maybeCompact --always[preparedDue]--> turn.compacting',
        'turn.compacting --xstate.done.actor.compactor[swappingPrepared]--> turn.maybeCompact',
        'turn.maybeCompact --always[overThreshold]--> turn.compacting',
        'turn.maybeCompact --always[autoCompactionDue]--> turn.compacting',
        'turn.maybeCompact --always[beyondHorizon]--> turn.compacting',
        'turn.buildPrompt --always[exceedsWindow]--> turn.failed',
        'turn.stream --xstate.error.actor.llm[overflowNotYetRetried]--> turn.compacting',
        'turn.stream --xstate.error.actor.llm[retryable]--> turn.retryWait',
        'turn.markUpdated --always[requestLimitReached]--> turn.failed',
        'turn.start --always[toolsGiven]--> turn.runTools',
        'turn.markUpdated --always[hostLoop]--> turn.done',
        'turn --abort--> turn.aborted',
      ]),
    );
  }); // path enumeration is CPU-bound: ~7 s alone, several times that on a loaded machine

  it("a host's loop: a call's pass ends at the answer, tool calls and all; a tools pass runs them and marks the memory", () => {
    const call = setupTurn('llm', false, 'call');
    const callPaths = getShortestPaths(call.machine, { input: call.input, events: call.events, serializeState: call.serialize as never });
    const ends = (paths: typeof callPaths) =>
      paths
        .filter((p) => p.state.value === 'done')
        .map((p) => p.steps.map((s) => s.event.type as string).filter((t) => t !== 'xstate.init'));
    // Done as soon as the model answered, whether or not it called tools: the host runs them.
    expect(ends(callPaths)).toContainEqual(['xstate.done.actor.memoryStore', 'xstate.done.actor.llm']);
    expect(callPaths.some((p) => p.steps.some((s) => s.state.matches('runTools')))).toBe(false);
    const tools = setupTurn('llm', false, 'tools');
    const toolPaths = getShortestPaths(tools.machine, {
      input: tools.input,
      events: tools.events,
      serializeState: tools.serialize as never,
    });
    // Straight to the tools, then done: no request to the model.
    expect(ends(toolPaths)).toContainEqual(['xstate.done.actor.toolRunner']);
    expect(toolPaths.some((p) => p.steps.some((s) => s.state.matches('loadMemory')))).toBe(false);
  });

  it('the paths say what the spec says', () => {
    const { machine, input, events, serialize } = setupTurn();
    const paths = getShortestPaths(machine, { input, events, serializeState: serialize as never });
    const to = (value: string) => paths.filter((p) => p.state.value === value).map((p) => p.steps.map((s) => s.event.type));
    // The shortest way to an answer: memory loaded, then the model answers.
    expect(to('done')[0]).toEqual(['xstate.init', 'xstate.done.actor.memoryStore', 'xstate.done.actor.llm']);
    // A memory that cannot fit the window is compacted first, then fails before any request is sent.
    const huge = paths.filter((p) => p.state.value === 'failed' && p.state.context.memory?.version === 3);
    const shortestHuge = huge.sort((a, b) => a.steps.length - b.steps.length)[0]!;
    expect(shortestHuge.steps.map((s) => s.event.type)).toEqual([
      'xstate.init',
      'xstate.done.actor.memoryStore',
      expect.stringMatching(/^xstate\.(done|error)\.actor\.compactor$/),
    ]);
  });
});

describe('historyMode machine, model-based', () => {
  const template = memoryHealth('# Working Memory\n\n## Current task\n<!-- what? -->\n');
  const real = { differsFromTemplate: true, contentChars: 120 };
  const middling = { differsFromTemplate: true, contentChars: 15 };
  const empty = { differsFromTemplate: true, contentChars: 0 };
  const events = [
    { type: 'memory.evaluate', health: real, modelWrites: 1 },
    { type: 'memory.evaluate', health: real, modelWrites: 0 },
    { type: 'memory.evaluate', health: middling, modelWrites: 3 },
    { type: 'memory.evaluate', health: empty, modelWrites: 4 },
    { type: 'memory.evaluate', health: template, modelWrites: 2 },
    { type: 'mode.pin', mode: 'phase1' },
    { type: 'mode.pin', mode: 'phase2' },
    { type: 'mode.pin', mode: 'hybrid' },
    { type: 'mode.unpin' },
  ] as never[];
  const serialize = (s: SnapshotFrom<typeof historyModeMachine>) =>
    JSON.stringify({ value: s.value, pinned: s.context.pinned, health: s.context.health, writes: s.context.modelWrites });
  // For simple paths the state is what the guards decide on; anything richer explodes.
  const coarse = (s: SnapshotFrom<typeof historyModeMachine>) =>
    JSON.stringify({
      value: s.value,
      pinned: s.context.pinned,
      maintained: s.context.health.contentChars >= 20 && s.context.modelWrites > 0,
    });
  const inputs: HistoryModeInput[] = [
    { restored: 'phase1', pinned: null, health: template, modelWrites: 0 },
    { restored: 'phase2', pinned: null, health: real, modelWrites: 2 },
    { restored: 'hybrid', pinned: null, health: empty, modelWrites: 2 },
    { restored: 'phase1', pinned: 'phase1', health: template, modelWrites: 0 },
  ];

  it('from every restored state, paths reach every state and fire every transition', () => {
    const run = { visited: new Set<string>(), fired: new Set<never>() };
    for (const input of inputs) {
      const shortest = getShortestPaths(historyModeMachine, { input, events, serializeState: serialize as never });
      runPaths(historyModeMachine, shortest, { input, serialize: serialize as never }, run);
      const simple = getSimplePaths(historyModeMachine, { input, events, serializeState: coarse as never });
      runPaths(historyModeMachine, simple, { input, serialize: coarse as never }, run);
    }
    expect(allStateIds(historyModeMachine).filter((id) => !run.visited.has(id))).toEqual([]);
    const missed = [...allTransitions(historyModeMachine)].filter(([t]) => !run.fired.has(t as never)).map(([, n]) => n);
    expect(missed).toEqual([]);
  }); // path enumeration is CPU-bound: ~7 s alone, several times that on a loaded machine

  it('switches exactly as docs/design.md §2.6 says', () => {
    const input = inputs[0]!;
    const paths = getShortestPaths(historyModeMachine, { input, events, serializeState: serialize as never });
    const reach = (value: unknown) => paths.find((p) => JSON.stringify(p.state.value) === JSON.stringify(value))?.steps.map((s) => s.event);
    // phase 2 needs real content *and* a write by the model.
    expect(reach({ auto: 'phase2' })).toEqual([{ type: 'xstate.init' }, events[0]]);
    // hybrid is only reached from phase 2, when the memory is nearly empty.
    expect(reach({ auto: 'hybrid' })).toEqual([{ type: 'xstate.init' }, events[0], events[3]]);
    // a middling memory in phase 2 is not "nearly empty".
    const phase2Paths = getShortestPaths(historyModeMachine, {
      input: inputs[1]!,
      events: [events[2]!],
      serializeState: serialize as never,
    });
    expect(phase2Paths.length).toBeGreaterThan(1);
    for (const path of phase2Paths) expect(path.state.value).toEqual({ auto: 'phase2' });
  });
});
