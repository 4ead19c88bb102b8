/** A transition's id, the same in the trace (which transitions a step took) and in the drawn chart. */
import type { AnyStateNode } from 'xstate';

type Transition = AnyStateNode['transitions'] extends Map<string, (infer T)[]> ? T : never;

/** A transition's id: its source, its event and its place among the source's transitions for that event. */
export function transitionId(t: Transition): string {
  const list = t.eventType ? t.source.transitions.get(t.eventType) : t.source.always;
  return `${t.source.id}|${t.eventType || 'always'}|${Math.max(0, list?.indexOf(t) ?? 0)}`;
}
