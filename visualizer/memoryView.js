// The working memory as it was at a step, with its diff against the previous version.

import { el } from './dom.js';

/** The working memory as it was at `step`, with its diff against the version before. */
export function renderMemory(box, caption, memories, step) {
  let index = -1;
  memories.forEach((m, i) => {
    if (m.at <= step) index = i;
  });
  if (index < 0) {
    box.textContent = '';
    caption.textContent = '';
    return;
  }
  const current = memories[index];
  const previous = memories[index - 1];
  caption.textContent = previous
    ? `version ${index + 1} of ${memories.length}${current.turn != null ? `, turn ${current.turn}` : ''} — changes from the previous version`
    : `version 1 of ${memories.length}`;
  const lines = previous
    ? diffLines(String(previous.content).split('\n'), String(current.content).split('\n'))
    : String(current.content).split('\n').map((text) => ({ kind: 'same', text }));
  box.replaceChildren(...lines.map((l) => el('div', { class: l.kind }, `${l.kind === 'add' ? '+ ' : l.kind === 'del' ? '- ' : '  '}${l.text}`)));
}

/** A line diff by longest common subsequence (memory files are small). */
function diffLines(a, b) {
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) out.push({ kind: 'same', text: a[i++] }), j++;
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({ kind: 'del', text: a[i++] });
    else out.push({ kind: 'add', text: b[j++] });
  }
  while (i < n) out.push({ kind: 'del', text: a[i++] });
  while (j < m) out.push({ kind: 'add', text: b[j++] });
  return out;
}
