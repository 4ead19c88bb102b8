// workmem visualizer: replays a session's trace on the statecharts drawn from the
// machines, charts its requests and shows its working memory as it was; sessions that
// run with the visualizer option stream here live. Plain ES module, no dependencies.
// Record data only ever reaches the page as text (textContent, attributes): never as markup.

import { el, svgEl } from './dom.js';
import { renderContext } from './contextView.js';

const $ = (selector) => document.querySelector(selector);
// The per-run token, from the fragment of the URL `workmem viz` printed: sent on every API
// fetch (Authorization) and on /live (a WebSocket subprotocol: a browser cannot set headers there).
const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
const state = {
  charts: new Map(), // machine → { svg, model }
  machine: 'turn',
  sessionId: null,
  records: [],
  derived: null,
  step: 0,
  live: new Set(),
  /** The number of the next streamed record the page expects (null: not following a live session). */
  next: null,
  loadingId: null,
  pending: null,
  onlyMachine: false,
  shownRequest: undefined,
};

/** An API call with the token; a refusal is said plainly. */
async function api(path) {
  const response = await fetch(path, { headers: { authorization: `Bearer ${token}` } });
  if (response.status === 401) throw new Error('this page needs the URL `workmem viz` printed, with its #token=…');
  return response;
}

async function main() {
  const charts = await (await api('/api/charts')).json();
  for (const chart of charts.charts) state.charts.set(chart.machine, chart);
  await refreshSessions();
  showChart();
  // Subscribed before the trace is read: nothing streamed in between is missed.
  await connectLive();
  const params = new URLSearchParams(location.search);
  if (params.get('machine')) setMachine(params.get('machine'));
  if (params.get('session')) await loadSession(params.get('session'));
  bindControls();
}

// ---- sessions and traces --------------------------------------------------------

async function refreshSessions() {
  const { sessions } = await (await api('/api/sessions')).json();
  const select = $('#session');
  const current = select.value;
  for (const s of sessions) {
    if (![...select.options].some((o) => o.value === s.id)) select.add(new Option(label(s), s.id));
  }
  select.value = current;
  markLive();
}

function label(s) {
  const when = new Date(s.createdAt).toISOString().slice(0, 16).replace('T', ' ');
  return `${s.id.slice(0, 8)} · ${when} · ${s.name ?? s.cwd}`;
}

/**
 * Loads a session's trace. For a live session the answer says from which streamed record
 * (`next`) the page goes on; records streamed while the answer is on its way wait in
 * `pending`. `keepStep`: a reload keeps the replay where it was unless it followed the end.
 */
async function loadSession(id, keepStep = false) {
  state.loadingId = id;
  state.pending = [];
  const response = await api(`/api/sessions/${encodeURIComponent(id)}/trace`);
  const body = await response.json();
  if (state.loadingId !== id) return; // another load began meanwhile
  const pending = state.pending;
  state.loadingId = null;
  state.pending = null;
  if (!response.ok) return showProblems([body.error]);
  const following = !keepStep || !state.derived || state.step >= state.derived.steps.length - 1;
  state.sessionId = body.sessionId;
  state.next = Number.isInteger(body.next) ? body.next : null;
  const select = $('#session');
  if (![...select.options].some((o) => o.value === body.sessionId)) select.add(new Option(body.sessionId.slice(0, 8), body.sessionId));
  select.value = body.sessionId;
  state.records = body.records;
  showProblems(body.problems);
  derive();
  setStep(following ? state.derived.steps.length - 1 : state.step);
  history.replaceState(null, '', `?session=${encodeURIComponent(body.sessionId)}&machine=${encodeURIComponent(state.machine)}${location.hash}`);
  for (const data of pending) streamed(data);
}

/** A record streamed live: in order it is added; already in the trace answer, skipped; after a gap, the trace is asked for again. */
function streamed(data) {
  if (state.pending && data.sessionId === state.loadingId) return void state.pending.push(data);
  if (data.sessionId !== state.sessionId || state.loadingId) return;
  if (Number.isInteger(data.n)) {
    if (state.next !== null && data.n < state.next) return;
    if (state.next === null || data.n > state.next) return void loadSession(state.sessionId, true);
    state.next++;
  }
  const following = !state.derived || state.step >= state.derived.steps.length - 1;
  state.records.push(data.record);
  derive();
  if (following) setStep(state.derived.steps.length - 1);
  else $('#position').textContent = `${state.step + 1} / ${state.derived.steps.length}`;
}

function showProblems(problems) {
  const box = $('#problems');
  box.hidden = !problems || problems.length === 0;
  box.textContent = (problems ?? []).join(' · ');
}

// What the records say, ordered by step: steps, requests (with what each sent), markers,
// memory versions.
function derive() {
  const steps = [];
  const requests = [];
  const markers = [];
  const memories = [];
  const systems = new Map();
  systems.detailIndexTokens = new Map();
  const bodies = new Map();
  let sent = null; // the request record waiting for its prompt_built
  let compactions = [];
  state.records.forEach((r, idx) => {
    if (r.k === 'step') steps.push(r);
    else if (r.k === 'memory') memories.push({ ...r, at: steps.length - 1 });
    else if (r.k === 'system') {
      systems.set(r.hash, r.content);
      systems.detailIndexTokens.set(r.hash, r.detailIndexTokens);
    } else if (r.k === 'message') {
      // A seq can be traced again (a compaction stubbed it): each request reads the version it sent.
      if (!bodies.has(r.seq)) bodies.set(r.seq, []);
      bodies.get(r.seq).push({ idx, record: r });
    } else if (r.k === 'request') sent = { ...r, idx };
    else if (r.k === 'event') {
      const e = r.event;
      if (e.type === 'prompt_built') {
        // A request record comes just before its prompt_built (a request built twice, after an overflow, has two).
        const match = sent && sent.turn === e.turn && sent.request === e.request ? sent : null;
        requests.push({ event: e, at: steps.length - 1, sent: match, compactions });
        sent = null;
        compactions = [];
      }
      if (e.type === 'compaction_end' && e.replaced > 0) compactions.push(e);
      if (e.type === 'turn_end' && e.cached != null) for (const q of requests) if (q.event.turn === e.turn) q.turnCached = e.cached;
      const kind = { reminder: 'reminder', memory_updated: 'memory', mode_changed: 'mode', compaction_end: 'compaction' }[e.type];
      if (kind && !(e.type === 'compaction_end' && e.replaced === 0)) markers.push({ kind, event: e, at: steps.length - 1, request: requests.length });
    }
  });
  state.derived = { steps, requests, markers, memories, systems, bodies };
  state.shownRequest = undefined;
  const slider = $('#slider');
  slider.max = String(Math.max(0, steps.length - 1));
  renderTimeline();
}

// ---- the statechart ---------------------------------------------------------------

function setMachine(machine) {
  if (!state.charts.has(machine)) return;
  state.machine = machine;
  for (const b of document.querySelectorAll('#machines button')) b.classList.toggle('on', b.dataset.machine === machine);
  $('#only-name').textContent = machine;
  showChart();
  if (state.derived) setStep(state.step);
}

// The chart is markup, parsed as SVG: it is our server's Graphviz rendering of our own
// machine definitions (no record data in it), fetched with the token; and the CSP forbids
// inline script and event handlers should anything ever slip into it.
function showChart() {
  const chart = state.charts.get(state.machine);
  const box = $('#chart');
  box.replaceChildren();
  if (!chart) return;
  const doc = new DOMParser().parseFromString(chart.svg, 'image/svg+xml');
  if (doc.documentElement.nodeName === 'svg') box.append(document.importNode(doc.documentElement, true));
}

function leavesOf(prefix, value) {
  if (typeof value === 'string') return [`${prefix}.${value}`];
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leavesOf(`${prefix}.${k}`, v));
  return [];
}

/** The last step of the shown machine at or before step i. */
function machineStep(i) {
  const steps = state.derived.steps;
  for (let j = Math.min(i, steps.length - 1); j >= 0; j--) if (steps[j].machine === state.machine) return steps[j];
  return null;
}

function highlight(i) {
  const chart = $('#chart');
  for (const el of chart.querySelectorAll('.active, .active-parent, .last')) el.classList.remove('active', 'active-parent', 'last');
  const step = machineStep(i);
  if (!step) return;
  for (const leaf of leavesOf(state.machine, step.value)) {
    const node = chart.querySelector(`[id="state:${CSS.escape(leaf)}"]`);
    node?.classList.add('active');
    // Every enclosing compound state is active too.
    for (let id = leaf.slice(0, leaf.lastIndexOf('.')); id.includes('.'); id = id.slice(0, id.lastIndexOf('.'))) {
      chart.querySelector(`[id="state:${CSS.escape(id)}"]`)?.classList.add('active-parent');
    }
  }
  for (const t of step.transitions) {
    // Loops on one state are one edge: each of their transitions is a class of it.
    for (const el of chart.querySelectorAll(`[id="t:${CSS.escape(t)}"], [id^="t:${CSS.escape(t)}#"], g.edge[class~="t:${CSS.escape(t)}"]`)) el.classList.add('last');
  }
}

// ---- replay -------------------------------------------------------------------------

function setStep(i) {
  const { steps } = state.derived;
  if (steps.length === 0) {
    $('#step').textContent = 'This trace has no steps yet.';
    return;
  }
  state.step = Math.max(0, Math.min(i, steps.length - 1));
  $('#slider').value = String(state.step);
  $('#position').textContent = `${state.step + 1} / ${steps.length}`;
  highlight(state.step);
  describeStep(state.step);
  renderTimelineCursor();
  renderMemory();
  showContext();
}

/** The request at step i: the last one built at or before it (-1: none yet). */
function requestAt(i) {
  let current = -1;
  state.derived.requests.forEach((r, k) => {
    if (r.at <= i) current = k;
  });
  return current;
}

/** The context view follows the replay, redrawn only when the request changes. */
function showContext() {
  const index = requestAt(state.step);
  if (index === state.shownRequest) return;
  state.shownRequest = index;
  const { requests, systems, bodies } = state.derived;
  const r = requests[index];
  const previous = requests[index - 1];
  renderContext($('#context'), $('#context-caption'), {
    request: r?.sent ?? null,
    built: r?.event ?? null,
    index,
    systems,
    bodies,
    previous: previous?.sent ?? null,
    compactions: r?.compactions ?? [],
    cached: r?.event?.cached ?? r?.turnCached ?? null,
    loadFile,
  });
  $('#context').dataset.request = String(index);
}

async function loadFile(file) {
  const response = await api(`/api/sessions/${encodeURIComponent(state.sessionId)}/memory-file?path=${encodeURIComponent(file)}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error);
  return body.content;
}

/** Step by `delta` through all steps, or through those of the machine shown only. */
function move(delta) {
  const { steps } = state.derived;
  if (!state.onlyMachine) return setStep(state.step + delta);
  const direction = Math.sign(delta);
  let i = state.step;
  for (let left = Math.abs(delta); left > 0; left--) {
    let j = i + direction;
    while (j >= 0 && j < steps.length && steps[j].machine !== state.machine) j += direction;
    if (j < 0 || j >= steps.length) break;
    i = j;
  }
  setStep(i);
}

/** Jump to the next or the previous request. */
function moveRequest(direction) {
  const { requests } = state.derived;
  const current = requestAt(state.step);
  const target = requests[current + direction];
  if (target) setStep(target.at);
}

/** The step panel describes the machine shown: its last step at or before step i. */
function describeStep(i) {
  const current = state.derived.steps[i];
  const step = machineStep(i);
  const other =
    current.machine === state.machine
      ? ''
      : el('div', { class: 'muted', id: 'step-current' }, `this step: ${current.machine} — ${eventLabel(current.event)}`);
  if (!step) {
    $('#step').replaceChildren(el('div', {}, el('b', {}, state.machine), ' ', el('span', { class: 'muted' }, 'no step yet')), other);
    return;
  }
  const from = step.from.map((s) => s.replace(/^[^.]+\.?/, '') || '(machine)').join(', ');
  const to = step.to.map((s) => s.replace(/^[^.]+\.?/, '')).join(', ') || '(stays)';
  const where = [step.turn != null ? `turn ${step.turn}` : null, step.request != null ? `request ${step.request}` : null].filter(Boolean).join(' · ');
  $('#step').replaceChildren(
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

// ---- the request timeline --------------------------------------------------------

const W = 600;
const PLOT_H = 130;
const PAD = { left: 40, right: 8, top: 10 };
const AXIS_H = 16;
const ROW_H = 16;
const MARKER_W = 16;

/**
 * Marker rows: each marker goes in the first row where it clears the one before it, so
 * that none overlaps another.
 */
function markerRows(xs, width = MARKER_W) {
  const ends = [];
  return xs.map((x) => {
    let row = ends.findIndex((end) => end <= x - width);
    if (row < 0) row = ends.length;
    ends[row] = x;
    return row;
  });
}

function renderTimeline() {
  const { requests, markers } = state.derived;
  const box = $('#timeline');
  if (requests.length === 0) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No requests recorded.'));
    return;
  }
  // A trace file can be damaged or forged: what is not a number is drawn as 0, and said as it is.
  const num = (v) => (Number.isFinite(Number(v)) ? Number(v) : 0);
  const window = Math.max(1, ...requests.map((r) => num(r.event.tokens.window)));
  const x = (i) => PAD.left + (requests.length === 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (requests.length - 1));
  const y = (tokens) => PAD.top + (1 - num(tokens) / window) * (PLOT_H - PAD.top);
  const points = requests.map((r, i) => `${x(i)},${y(r.event.tokens.total)}`).join(' ');
  const placed = markers
    .map((m) => ({ m, mx: x(Math.min(requests.length - 1, Math.max(0, m.request - 1))) }))
    .sort((a, b) => a.mx - b.mx);
  const rows = markerRows(placed.map((p) => p.mx));
  const H = PLOT_H + AXIS_H + (Math.max(-1, ...rows) + 1) * ROW_H + 4;
  const chart = svgEl(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'prompt tokens per request, by turn' },
    svgEl(
      'line',
      { class: 'threshold', x1: PAD.left, x2: W - PAD.right, y1: y(window * 0.75), y2: y(window * 0.75) },
      svgEl('title', {}, `75 % of the ${window.toLocaleString()}-token window`),
    ),
    svgEl('text', { class: 'axis', x: 2, y: y(window) + 8 }, `${(window / 1000).toFixed(0)}k`),
    svgEl('text', { class: 'axis', x: 2, y: y(window * 0.75) + 3 }, '75 %'),
    svgEl('text', { class: 'axis', x: 2, y: PLOT_H }, '0'),
    svgEl('line', { class: 'baseline', x1: PAD.left, x2: W - PAD.right, y1: PLOT_H, y2: PLOT_H }),
    svgEl('polyline', { class: 'line', points }),
    svgEl('line', { class: 'cursor', id: 'timeline-cursor', x1: 0, x2: 0, y1: PAD.top, y2: PLOT_H }),
  );
  // The x axis: the turn of each turn's first request, thinned so that labels keep apart.
  chart.append(svgEl('text', { class: 'axis', x: 2, y: PLOT_H + 12 }, 'turn'));
  let lastLabel = -Infinity;
  requests.forEach((r, i) => {
    if (i > 0 && requests[i - 1].event.turn === r.event.turn) return;
    const label = String(r.event.turn);
    const lx = x(i);
    if (lx - lastLabel < 6 + label.length * 6) return;
    lastLabel = lx;
    chart.append(svgEl('line', { class: 'tick', x1: lx, x2: lx, y1: PLOT_H, y2: PLOT_H + 3 }));
    chart.append(svgEl('text', { class: 'axis turn', x: lx, y: PLOT_H + 12, 'text-anchor': 'middle' }, label));
  });
  requests.forEach((r, i) => {
    const t = r.event.tokens;
    const point = svgEl(
      'circle',
      { class: 'point', 'data-index': i, cx: x(i), cy: y(t.total), r: 3.5 },
      svgEl(
        'title',
        {},
        `request ${i + 1} (turn ${r.event.turn}, request ${r.event.request}, ${r.event.mode}): ${t.total.toLocaleString()} tokens, ${t.percent} % of the window`,
      ),
    );
    point.addEventListener('click', () => setStep(r.at));
    chart.append(point);
  });
  const glyph = { reminder: '▲', memory: '✎', mode: '⇄', compaction: '⤓' };
  placed.forEach(({ m, mx }, k) => {
    const my = PLOT_H + AXIS_H + rows[k] * ROW_H + 10;
    chart.append(svgEl('text', { class: `marker ${m.kind}`, x: mx, y: my, 'text-anchor': 'middle' }, glyph[m.kind], svgEl('title', {}, markerText(m))));
  });
  box.replaceChildren(chart);
}

function markerText(m) {
  const e = m.event;
  switch (m.kind) {
    case 'reminder':
      return `reminder (${e.level}, ${e.reason}): ${e.rounds} requests since the last memory update, ${e.tokensPercent} %`;
    case 'memory':
      return `memory written: ${e.path}, ${e.bytes} bytes${e.warning ? ` — ${e.warning}` : ''}`;
    case 'mode':
      return `history mode ${e.from} → ${e.to}${e.pinned ? ' (pinned)' : ''}`;
    case 'compaction':
      return `compaction (${e.reason}): ${e.replaced} items, ${e.tokensBefore} → ${e.tokensAfter} tokens → ${[].concat(e.files).join(', ')}`;
  }
  return '';
}

function renderTimelineCursor() {
  const { requests } = state.derived;
  const cursor = $('#timeline-cursor');
  if (!cursor || requests.length === 0) return;
  const current = requestAt(state.step);
  for (const c of document.querySelectorAll('#timeline .point')) c.classList.toggle('current', Number(c.dataset.index) === current);
  const point = document.querySelector(`#timeline .point[data-index="${current}"]`);
  const cx = point ? point.getAttribute('cx') : '-10';
  cursor.setAttribute('x1', cx);
  cursor.setAttribute('x2', cx);
}

// ---- working memory, as it was, with its diff -----------------------------------

function renderMemory() {
  const { memories } = state.derived;
  let index = -1;
  memories.forEach((m, i) => {
    if (m.at <= state.step) index = i;
  });
  const box = $('#memory');
  if (index < 0) {
    box.textContent = '';
    $('#memory-caption').textContent = '';
    return;
  }
  const current = memories[index];
  const previous = memories[index - 1];
  $('#memory-caption').textContent = previous
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

// ---- live sessions -------------------------------------------------------------------

/** Resolves once the server has registered the page (its first `live` message), or after a while. */
function connectLive() {
  const socket = new WebSocket(`ws://${location.host}/live`, ['workmem', `token.${token}`]);
  let registered;
  const listening = new Promise((resolve) => {
    registered = resolve;
    setTimeout(resolve, 3000);
  });
  socket.addEventListener('message', async (message) => {
    const data = JSON.parse(message.data);
    if (data.type === 'live') {
      registered();
      state.live = new Set(data.sessions);
      if (data.sessions.some((id) => ![...$('#session').options].some((o) => o.value === id))) await refreshSessions();
      markLive();
    } else if (data.type === 'record') {
      streamed(data);
    }
  });
  socket.addEventListener('close', () => {
    // Records streamed while the socket was down are missing: ask for the trace again once back.
    state.next = null;
    setTimeout(() => connectLive().then(() => state.sessionId && loadSession(state.sessionId, true)), 2000);
  });
  return listening;
}

function markLive() {
  const badge = $('#live');
  badge.className = `live ${state.live.size ? 'on' : 'off'}`;
  badge.textContent = state.live.size ? `● live: ${[...state.live].map((id) => id.slice(0, 8)).join(', ')}` : '● live: none';
  for (const option of $('#session').options) {
    if (!option.value) continue;
    const base = option.textContent.replace(/^● /, '');
    option.textContent = `${state.live.has(option.value) ? '● ' : ''}${base}`;
  }
}

// ---- controls --------------------------------------------------------------------------

function bindControls() {
  $('#session').addEventListener('change', (e) => e.target.value && loadSession(e.target.value));
  for (const b of document.querySelectorAll('#machines button')) b.addEventListener('click', () => setMachine(b.dataset.machine));
  $('#slider').addEventListener('input', (e) => setStep(Number(e.target.value)));
  $('#first').addEventListener('click', () => setStep(0));
  $('#prev').addEventListener('click', () => move(-1));
  $('#next').addEventListener('click', () => move(1));
  $('#prev-request').addEventListener('click', () => moveRequest(-1));
  $('#next-request').addEventListener('click', () => moveRequest(1));
  $('#only-machine').addEventListener('change', (e) => (state.onlyMachine = e.target.checked));
  $('#last').addEventListener('click', () => setStep(Infinity));
  document.addEventListener('keydown', (e) => {
    if (!state.derived || e.target instanceof HTMLSelectElement) return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, PageUp: -20, PageDown: 20 };
    if (e.key in moves) move(moves[e.key]);
    else if (e.key === '[' || e.key === ']') moveRequest(e.key === '[' ? -1 : 1);
    else if (e.key === 'Home') setStep(0);
    else if (e.key === 'End') setStep(Infinity);
    else return;
    e.preventDefault();
  });
}

main().catch((error) => showProblems([`the visualizer could not start: ${error.message}`]));
