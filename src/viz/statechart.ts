/**
 * The statechart, drawn from the machine definitions themselves: we walk the state nodes
 * (their transitions, `always` transitions with guard names, invoked actors), write DOT
 * and render it with Graphviz compiled to WASM — offline, and never a hand-drawn copy:
 * a change to a machine changes the picture. States and transitions get stable SVG ids
 * (`state:<id>`, `t:<id>`), which the visualizer and the trace share.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { transitionId } from '../trace/transitionId.js';

export interface ChartState {
  id: string;
  key: string;
  parent: string | null;
  type: string;
  invokes: string[];
  /** Left at once by an `always` transition (it shows only in microsteps). */
  passThrough: boolean;
}

export interface ChartTransition {
  id: string;
  source: string;
  targets: string[];
  label: string;
  guard: string | null;
}

export interface ChartModel {
  machine: string;
  states: ChartState[];
  transitions: ChartTransition[];
}

export function chartOf(machine: AnyStateMachine): ChartModel {
  const states: ChartState[] = [];
  const transitions: ChartTransition[] = [];
  const visit = (node: AnyStateNode, parent: string | null): void => {
    states.push({
      id: node.id,
      key: node.key,
      parent,
      type: node.type,
      invokes: node.invoke.map((i) => (typeof i.src === 'string' ? i.src : i.id)),
      passThrough: (node.always?.length ?? 0) > 0,
    });
    for (const [eventType, list] of node.transitions) {
      for (const t of list) transitions.push(describe(t, eventType));
    }
    for (const t of node.always ?? []) transitions.push(describe(t, ''));
    for (const child of Object.values(node.states) as AnyStateNode[]) visit(child, node.id);
  };
  visit(machine.root, null);
  return { machine: machine.id, states, transitions };
}

function describe(t: Parameters<typeof transitionId>[0], eventType: string): ChartTransition {
  const guard = t.guard ? (typeof t.guard === 'string' ? t.guard : ((t.guard as { type?: string }).type ?? 'guard')) : null;
  return {
    id: transitionId(t),
    source: t.source.id,
    targets: t.target?.map((n: AnyStateNode) => n.id) ?? [],
    label: eventLabel(eventType),
    guard,
  };
}

/** Short labels for XState's internal event names. */
export function eventLabel(eventType: string): string {
  if (!eventType) return 'always';
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) return `${actor[1]}: ${actor[2]}`;
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after) return `after ${after[1]}`;
  return eventType;
}

const q = (s: string): string => JSON.stringify(s);

export function toDot(model: ChartModel): string {
  const byParent = new Map<string | null, ChartState[]>();
  for (const s of model.states) byParent.set(s.parent, [...(byParent.get(s.parent) ?? []), s]);
  const compound = new Set(model.states.filter((s) => (byParent.get(s.id)?.length ?? 0) > 0).map((s) => s.id));
  const root = model.states.find((s) => s.parent === null)!;
  const lines: string[] = [
    `digraph ${q(model.machine)} {`,
    '  graph [compound=true, rankdir=TB, fontname="Helvetica", fontsize=11, nodesep=0.35, ranksep=0.45, bgcolor="transparent"];',
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", color="#4b5563", fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9, color="#6b7280", fontcolor="#374151", arrowsize=0.7];',
  ];
  const anchor = (id: string): string => `${id}.__initial`;
  const any = (id: string): string => `${id}.__any`;
  const sources = new Set(model.transitions.map((t) => t.source));
  const emit = (parent: ChartState, depth: number): void => {
    const pad = '  '.repeat(depth);
    const children = byParent.get(parent.id) ?? [];
    // The regions of a parallel state all start: each has an initial mark of its own, none is the parallel state's.
    if (parent.type !== 'parallel')
      lines.push(`${pad}${q(anchor(parent.id))} [shape=point, width=0.09, label="", id=${q(`initial:${parent.id}`)}];`);
    if (sources.has(parent.id))
      lines.push(
        `${pad}${q(any(parent.id))} [shape=plaintext, style="", label="any state", fontsize=9, fontcolor="#6b7280", id=${q(`any:${parent.id}`)}];`,
      );
    for (const child of children) {
      if (compound.has(child.id)) {
        // A region of a parallel state is drawn dashed: it runs beside its siblings.
        const style = parent.type === 'parallel' ? 'rounded,dashed' : 'rounded';
        lines.push(
          `${pad}subgraph ${q(`cluster_${child.id}`)} {`,
          `${pad}  label=${q(child.key)}; id=${q(`state:${child.id}`)}; style="${style}"; color="#9ca3af";`,
        );
        emit(child, depth + 1);
        lines.push(`${pad}}`);
      } else {
        const invoke = child.invokes.map((src) => `\\n⟳ ${src}`).join('');
        const shape = child.type === 'final' ? ', peripheries=2' : child.passThrough ? ', style="rounded,dashed,filled"' : '';
        lines.push(`${pad}${q(child.id)} [id=${q(`state:${child.id}`)}, label="${child.key}${invoke}"${shape}];`);
      }
    }
  };
  emit(root, 1);
  // The first child of a compound is its initial state unless the machine says otherwise.
  for (const s of model.states) {
    if (!compound.has(s.id) || s.type === 'parallel') continue;
    const first = (byParent.get(s.id) ?? [])[0];
    if (first)
      lines.push(`  ${q(anchor(s.id))} -> ${q(compound.has(first.id) ? anchor(first.id) : first.id)} [style=dotted, arrowsize=0.5];`);
  }
  // Transitions without a target (actions only) are loops on their source. Several loops on
  // one state are drawn as one, its label a line per transition (dot piles the labels of
  // separate loops on one another); each transition's id is a class of that edge.
  const loops = new Map<string, ChartTransition[]>();
  for (const t of model.transitions) if (t.targets.length === 0) loops.set(t.source, [...(loops.get(t.source) ?? []), t]);
  const labelOf = (t: ChartTransition): string => `${t.label}${t.guard ? ` [${t.guard}]` : ''}`;
  const from = (t: ChartTransition): string => (compound.has(t.source) ? any(t.source) : t.source);
  const ltail = (t: ChartTransition): string =>
    compound.has(t.source) && t.source !== root.id ? `, ltail=${q(`cluster_${t.source}`)}` : '';
  for (const list of loops.values()) {
    const t = list[0]!;
    const classes = list.length > 1 ? `, class=${q(list.map((l) => `t:${l.id}`).join(' '))}` : '';
    const label = list.map(labelOf).join('\n');
    lines.push(`  ${q(from(t))} -> ${q(from(t))} [id=${q(`t:${t.id}`)}, label=${q(label)}${ltail(t)}, style=dotted${classes}];`);
  }
  for (const t of model.transitions) {
    if (t.targets.length === 0) continue;
    // From a compound state ("any state in it") the edge leaves its cluster.
    t.targets.forEach((target, i) => {
      const to = compound.has(target) ? anchor(target) : target;
      const head = compound.has(target) && target !== root.id ? `, lhead=${q(`cluster_${target}`)}` : '';
      const style = t.label === 'always' ? ', style=dashed' : '';
      lines.push(
        `  ${q(from(t))} -> ${q(to)} [id=${q(`t:${t.id}${i ? `#${i}` : ''}`)}, label=${q(labelOf(t))}${ltail(t)}${head}${style}];`,
      );
    });
  }
  lines.push('}');
  return lines.join('\n');
}

let viz: Promise<{ renderString(dot: string, options: { format: 'svg' }): string }> | null = null;

/** DOT → SVG with Graphviz compiled to WASM (no network, ~100 ms the first time). */
export async function renderSvg(dot: string): Promise<string> {
  viz ??= import('@viz-js/viz').then((m) => m.instance());
  return (await viz).renderString(dot, { format: 'svg' });
}
