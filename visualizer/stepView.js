// The step panel: the step of the machine shown, and which step of another machine the replay is at.

import { el } from './dom.js';

/** The step panel describes the machine shown: `step` is its last step at or before the `current` one (null: none yet). */
export function describeStep(box, machine, current, step) {
  const other =
    current.machine === machine
      ? ''
      : el('div', { class: 'muted', id: 'step-current' }, `this step: ${current.machine} — ${eventLabel(current.event)}`);
  if (!step) {
    box.replaceChildren(el('div', {}, el('b', {}, machine), ' ', el('span', { class: 'muted' }, 'no step yet')), other);
    return;
  }
  const from = step.from.map((s) => s.replace(/^[^.]+\.?/, '') || '(machine)').join(', ');
  const to = step.to.map((s) => s.replace(/^[^.]+\.?/, '')).join(', ') || '(stays)';
  const where = [step.turn != null ? `turn ${step.turn}` : null, step.request != null ? `request ${step.request}` : null].filter(Boolean).join(' · ');
  box.replaceChildren(
    el('div', {}, el('b', {}, step.machine), ' ', el('span', { class: 'muted' }, where)),
    el('div', {}, 'event ', el('span', { class: 'event', id: 'step-event' }, eventLabel(step.event))),
    el('div', {}, `${from} → `, el('b', { id: 'step-target' }, to)),
    other,
  );
}

function eventLabel(type) {
  type = String(type);
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(type);
  if (actor) return `${actor[1]}: ${actor[2]}`;
  const after = /^xstate\.after\.([^.]+)\./.exec(type);
  if (after) return `after ${after[1]}`;
  return type;
}
