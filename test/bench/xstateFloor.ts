/**
 * xstate's own cost for the shape of workmem's request, with nothing else in it: a session
 * machine (idle → accepting → running → saving → idle, an actor in each of the last three)
 * whose running state invokes a turn machine (start → loadMemory → checkReminder →
 * maybeCompact → buildPrompt → stream → done, an actor in loadMemory and in stream). Five
 * actors and ten transitions a request, as a Session's own turn makes them; every actor
 * resolves at once and each context has one field. What a request allocates here is
 * xstate's floor for that chart: the allocation bench sets workmem's figure beside it.
 * The smallest chart DESIGN.md §3 allows is measured too: the session runs the turn and
 * nothing else (no accept, no save), and the turn opens in loadMemory (no start state):
 * three actors and seven transitions a request.
 */
import { assign, createActor, fromPromise, setup, type InspectionEvent } from 'xstate';

const at = <T>(value: T) => fromPromise<T>(async () => value);

function floorTurn(minimal: boolean) {
  return setup({ actors: { memoryStore: at(1), llm: at(2) } }).createMachine({
    context: { value: 0 },
    initial: minimal ? 'loadMemory' : 'start',
    states: {
      start: { always: 'loadMemory' },
      loadMemory: {
        invoke: { src: 'memoryStore', onDone: { target: 'checkReminder', actions: assign({ value: ({ event }) => event.output }) } },
      },
      checkReminder: { always: 'maybeCompact' },
      maybeCompact: { always: 'buildPrompt' },
      buildPrompt: { always: 'stream' },
      stream: { invoke: { src: 'llm', onDone: { target: 'done', actions: assign({ value: ({ event }) => event.output }) } } },
      done: { type: 'final' },
    },
    output: ({ context }) => context.value,
  });
}

function floorSession(minimal: boolean) {
  return setup({
    types: { events: {} as { type: 'prompt' } },
    actors: { accept: at(1), save: at(3), turn: floorTurn(minimal) },
  }).createMachine({
    context: { value: 0 },
    initial: 'idle',
    states: {
      idle: { on: { prompt: minimal ? 'running' : 'accepting' } },
      accepting: {
        invoke: { src: 'accept', onDone: { target: 'running', actions: assign({ value: ({ event }) => event.output }) } },
      },
      running: {
        invoke: { src: 'turn', onDone: { target: minimal ? 'idle' : 'saving', actions: assign({ value: ({ event }) => event.output }) } },
      },
      saving: { invoke: { src: 'save', onDone: { target: 'idle', actions: assign({ value: ({ event }) => event.output }) } } },
    },
  });
}

/** The floor chart (`minimal`: the smallest one), started: `request()` runs one request through it and resolves back in idle. */
export function floorChart(minimal: boolean, inspect?: (event: InspectionEvent) => void): { request(): Promise<void> } {
  const actor = createActor(floorSession(minimal), inspect ? { inspect } : {});
  let backInIdle: (() => void) | null = null;
  actor.subscribe((snapshot) => {
    if (snapshot.value !== 'idle' || !backInIdle) return;
    const resolve = backInIdle;
    backInIdle = null;
    resolve();
  });
  actor.start();
  return {
    request: () =>
      new Promise<void>((resolve) => {
        backInIdle = resolve;
        actor.send({ type: 'prompt' });
      }),
  };
}

/** Actors started and transitions taken, from an actor system's inspection events. */
export class ChartCounts {
  actors = 0;
  transitions = 0;
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type === '@xstate.actor') this.actors++;
    else if (event.type === '@xstate.microstep') this.transitions++;
  };
}
