/**
 * Runs paths from xstate/graph against the real machine. Invoked actors are replaced by
 * promises that never settle; each path step sends the `xstate.done.actor.<id>` /
 * `xstate.error.actor.<id>` event itself (NOTES.md), so the same machine definition is
 * walked with scripted outcomes. Every transition that fires is recorded (from the
 * inspection microsteps), so a test can check that all of them were exercised.
 */
import { createActor, type AnyActor, type AnyStateMachine, type AnyStateNode, type EventObject, type Snapshot } from 'xstate';
import type { StatePath } from 'xstate/graph';
import { TakenTransitions } from '../../src/trace/takenTransitions.js';

type Transition = AnyStateNode['transitions'] extends Map<string, (infer T)[]> ? T : never;

/** Every transition of the machine, `always` ones included, with a readable name. */
export function allTransitions(machine: AnyStateMachine): Map<Transition, string> {
  const out = new Map<Transition, string>();
  const visit = (node: AnyStateNode): void => {
    for (const list of node.transitions.values()) for (const t of list) out.set(t, describe(t));
    for (const t of node.always ?? []) out.set(t, describe(t));
    for (const child of Object.values(node.states)) visit(child as AnyStateNode);
  };
  visit(machine.root);
  return out;
}

export function allStateIds(machine: AnyStateMachine): string[] {
  const ids: string[] = [];
  const visit = (node: AnyStateNode): void => {
    ids.push(node.id);
    for (const child of Object.values(node.states)) visit(child as AnyStateNode);
  };
  visit(machine.root);
  return ids;
}

function describe(t: Transition): string {
  const guard = t.guard ? `[${typeof t.guard === 'string' ? t.guard : ((t.guard as { type?: string }).type ?? 'inline')}]` : '';
  const targets = t.target?.map((n: AnyStateNode) => n.id).join(',') ?? '(self)';
  return `${t.source.id} --${t.eventType || 'always'}${guard}--> ${targets}`;
}

export interface PathRun {
  /** State node ids active at some point. */
  visited: Set<string>;
  fired: Set<Transition>;
}

export function runPaths<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject>(
  machine: AnyStateMachine,
  paths: StatePath<TSnapshot, TEvent>[],
  options: {
    input?: unknown;
    serialize: (snapshot: TSnapshot) => string;
    /** Called with each path's actor before it starts; what it returns is called after the last step. */
    watch?: (actor: AnyActor, path: StatePath<TSnapshot, TEvent>) => () => void;
  },
  run: PathRun = { visited: new Set(), fired: new Set() },
): PathRun {
  for (const path of paths) {
    let root: unknown;
    const taken = new TakenTransitions();
    const misread: string[] = [];
    const actor = createActor(machine, {
      input: options.input,
      inspect: (event) => {
        // xstate's own (private) record of each microstep's transitions is the oracle for the
        // trace recorder's public-API answer: every model-based path checks the two agree.
        const mine = taken.see(event);
        if (event.type === '@xstate.microstep') {
          const theirs = (event as unknown as { _transitions: Transition[] })._transitions;
          // In the same order within a region; the regions of a parallel state take theirs in an order xstate keeps to itself.
          if (mine?.length !== theirs.length || !sameOrderPerRegion(mine, theirs))
            misread.push(`takenTransitions: ${event.event.type} took [${theirs.map(describe)}], read as [${(mine ?? []).map(describe)}]`);
        }
        if (event.type === '@xstate.microstep' && (root === undefined || event.actorRef === root)) {
          for (const t of (event as unknown as { _transitions: Transition[] })._transitions) {
            run.fired.add(t);
            run.visited.add(t.source.id);
          }
          // Pass-through states (with `always`) appear only in microsteps, never in snapshots.
          for (const node of (event.snapshot as unknown as { _nodes: AnyStateNode[] })._nodes) run.visited.add(node.id);
        }
      },
    });
    root = actor;
    const done = options.watch?.(actor, path);
    actor.start();
    const record = (): void => {
      for (const node of (actor.getSnapshot() as unknown as { _nodes: AnyStateNode[] })._nodes) run.visited.add(node.id);
    };
    record();
    for (const [i, step] of path.steps.entries()) {
      if (i > 0 || step.event.type !== 'xstate.init') actor.send(step.event as never);
      if (misread.length > 0) throw new Error(`path step ${i} (${step.event.type}): ${misread.join('; ')}`);
      const snapshot = actor.getSnapshot() as unknown as TSnapshot & { status: string; error?: unknown };
      if (snapshot.status === 'error')
        throw new Error(`path step ${i} (${step.event.type}) put the actor in error: ${String(snapshot.error)}`);
      const expected = options.serialize(step.state);
      const actual = options.serialize(snapshot);
      if (expected !== actual) {
        throw new Error(`path step ${i} (${step.event.type}): the real machine is in ${actual}, the model said ${expected}`);
      }
      record();
    }
    done?.();
    actor.stop();
  }
  return run;
}

/** Each region of the root (the first two parts of a state id) takes its transitions in the same order in both lists. */
function sameOrderPerRegion(a: Transition[], b: Transition[]): boolean {
  const region = (t: Transition): string => t.source.id.split('.').slice(0, 2).join('.');
  const regions = new Set([...a, ...b].map(region));
  return [...regions].every((r) => {
    const x = a.filter((t) => region(t) === r);
    const y = b.filter((t) => region(t) === r);
    return x.length === y.length && x.every((t, i) => t === y[i]);
  });
}

/**
 * The events that can really arrive in a state: an actor's done/error event only while
 * that actor is invoked, a delayed event only while its state is active, anything else
 * always. (An unhandled actor error would put the real actor in error status.)
 */
export function eventsFor<TEvent extends EventObject>(events: readonly TEvent[]) {
  return (snapshot: Snapshot<unknown>): TEvent[] => {
    if (snapshot.status !== 'active') return [];
    const nodes = (snapshot as unknown as { _nodes: AnyStateNode[] })._nodes;
    const invoked = new Set(nodes.flatMap((n) => n.invoke.map((i) => i.id)));
    const active = new Set(nodes.map((n) => n.id));
    return events.filter((e) => {
      const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(e.type);
      if (actor) return invoked.has(actor[2]!);
      const after = /^xstate\.after\.[^.]+\.(.+)$/.exec(e.type);
      if (after) return active.has(after[1]!);
      return true;
    });
  };
}
