/**
 * Which transitions a microstep took, worked out with xstate's public API only (the
 * microstep inspection event carries them, but in a private field that may change
 * without notice). A microstep is the first step of a macrostep (the event's own
 * transitions: `machine.getTransitionData`), or a later one: the eventless transitions
 * enabled in the state before it, or, when there are none, those of a raised event.
 * Each actor's state before a microstep is the one it settled in (`@xstate.snapshot`) or
 * the previous microstep's. Guards are pure, so asking them again gives xstate's answer.
 * Within a region, the order is xstate's; the regions of a parallel state (the session's
 * turns and background) come in document order, where xstate takes them in the order it
 * entered their states, which it keeps to itself.
 */
import {
  getStateNodes,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  type InspectionEvent,
} from 'xstate';

interface Before {
  snapshot: AnyMachineSnapshot;
  /** At rest: the next microstep starts a macrostep. */
  settled: boolean;
}

export class TakenTransitions {
  private readonly before = new WeakMap<object, Before>();

  /** Feed every inspection event; for a microstep, returns the transitions it took. */
  see(event: InspectionEvent): AnyTransitionDefinition[] | null {
    if (event.type === '@xstate.snapshot') {
      if (isMachineSnapshot(event.snapshot)) this.before.set(event.actorRef, { snapshot: event.snapshot, settled: true });
      return null;
    }
    if (event.type !== '@xstate.microstep' || !isMachineSnapshot(event.snapshot)) return null;
    const after = event.snapshot;
    const before = this.before.get(event.actorRef);
    this.before.set(event.actorRef, { snapshot: after, settled: false });
    const machine = after.machine as AnyStateMachine;
    if (event.event.type === 'xstate.stop') return [];
    if (!before) {
      // The first microsteps after xstate.init leave the initial states by eventless
      // transitions; the state they left was never shown, but its states are the
      // machine's initial ones (and their context what the machine started with).
      return eventless(initialLeaves(machine.root), after, event.event);
    }
    if (before.settled) return machine.getTransitionData(before.snapshot, event.event);
    const enabled = eventless(leaves(before.snapshot), before.snapshot, event.event);
    return enabled.length > 0 ? enabled : machine.getTransitionData(before.snapshot, event.event);
  }
}

function isMachineSnapshot(snapshot: unknown): snapshot is AnyMachineSnapshot {
  return typeof snapshot === 'object' && snapshot !== null && 'machine' in snapshot && 'value' in snapshot;
}

function isLeaf(node: AnyStateNode): boolean {
  return node.type === 'atomic' || node.type === 'final';
}

function leaves(snapshot: AnyMachineSnapshot): AnyStateNode[] {
  return getStateNodes(snapshot.machine.root, snapshot.value).filter(isLeaf);
}

function initialLeaves(node: AnyStateNode): AnyStateNode[] {
  if (isLeaf(node)) return [node];
  if (node.type === 'parallel') return Object.values(node.states).flatMap((child) => initialLeaves(child as AnyStateNode));
  return node.initial.target.flatMap((target: AnyStateNode) => initialLeaves(target));
}

/** Per leaf state, the first `always` transition (its own, then its ancestors') whose guard passes. */
function eventless(atomic: AnyStateNode[], snapshot: AnyMachineSnapshot, event: AnyEventObject): AnyTransitionDefinition[] {
  const enabled = new Set<AnyTransitionDefinition>();
  for (const leaf of atomic) {
    search: for (let node: AnyStateNode | undefined = leaf; node; node = node.parent) {
      for (const t of node.always ?? []) {
        if (passes(t.guard, snapshot, event)) {
          enabled.add(t);
          break search;
        }
      }
    }
  }
  return [...enabled];
}

type Guard = AnyTransitionDefinition['guard'];

function passes(guard: Guard, snapshot: AnyMachineSnapshot, event: AnyEventObject): boolean {
  if (guard === undefined) return true;
  const args = { context: snapshot.context, event };
  if (typeof guard === 'function') return guardResult(guard, args, undefined);
  const named = typeof guard === 'string' ? { type: guard, params: undefined } : (guard as { type: string; params?: unknown });
  const impl = (snapshot.machine as AnyStateMachine).implementations.guards[named.type];
  if (impl === undefined) return false;
  if (typeof impl !== 'function') return passes(impl as Guard, snapshot, event);
  const params = typeof named.params === 'function' ? (named.params as (a: typeof args) => unknown)(args) : named.params;
  return guardResult(impl, args, params);
}

function guardResult(fn: object, args: object, params: unknown): boolean {
  // and()/or()/not()/stateIn() combine other guards inside xstate, out of public reach; our
  // machines use plain named guards only. Should one appear, it counts as passed: the
  // transition is then reported if it is the first enabled candidate.
  if ('check' in fn) return true;
  return Boolean((fn as (a: object, p: unknown) => unknown)(args, params));
}
