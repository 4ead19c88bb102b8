// workmem visualizer: replays a session's trace on the statecharts drawn from the
// machines, charts its requests and shows its working memory as it was; sessions that
// run with the visualizer option stream here live. Plain ES module, no dependencies.
// Record data only ever reaches the page as text (textContent, attributes): never as markup.

import { el } from './dom.js';
import { renderContext } from './contextView.js';
import { renderMemory } from './memoryView.js';
import { describeStep } from './stepView.js';
import { renderTimeline, timelineCursor } from './timeline.js';
import { traceModel, withStream } from './traceModel.js';

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
  /** A session was named (?session=, or picked): the page stays on it rather than following live ones. */
  chosen: false,
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
  const params = new URLSearchParams(location.search);
  state.chosen = Boolean(params.get('session'));
  // Subscribed before the trace is read: nothing streamed in between is missed.
  await connectLive();
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
  // A live session: its trace file lags behind; this run as streamed comes on top of it.
  const live = response.ok ? (await (await api(`/api/sessions/${encodeURIComponent(body.sessionId)}/live`)).json()).live : null;
  if (state.loadingId !== id) return; // another load began meanwhile
  const pending = state.pending;
  state.loadingId = null;
  state.pending = null;
  if (!response.ok) return showProblems([body.error]);
  const following = !keepStep || !state.derived || state.step >= state.derived.steps.length - 1;
  state.sessionId = body.sessionId;
  state.next = live ? live.next : null;
  const select = $('#session');
  if (![...select.options].some((o) => o.value === body.sessionId)) select.add(new Option(body.sessionId.slice(0, 8), body.sessionId));
  select.value = body.sessionId;
  state.records = live ? withStream(body.records, live.records) : body.records;
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

/** The model of the records, and the timeline drawn from it. */
function derive() {
  state.derived = traceModel(state.records);
  state.shownRequest = undefined;
  $('#slider').max = String(Math.max(0, state.derived.steps.length - 1));
  renderTimeline($('#timeline'), state.derived.requests, state.derived.markers, setStep);
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
  describeStep($('#step'), state.machine, steps[state.step], machineStep(state.step));
  timelineCursor(requestAt(state.step));
  renderMemory($('#memory'), $('#memory-caption'), state.derived.memories, state.step);
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
  const { requests, systems, bodies, instructions } = state.derived;
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
    usage: r?.turnUsage ?? null,
    host: r?.host ?? null,
    instructions,
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
      const fresh = data.sessions.filter((id) => !state.live.has(id));
      state.live = new Set(data.sessions);
      if (data.sessions.some((id) => ![...$('#session').options].some((o) => o.value === id))) await refreshSessions();
      markLive();
      followLive(fresh);
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

/**
 * Until a session is chosen, the page follows the sessions that go live (`chat --inspect`,
 * `rpc --inspect`): the newest to appear opens, live.
 */
function followLive(fresh) {
  if (state.chosen || fresh.length === 0 || state.loadingId) return;
  void loadSession(fresh[fresh.length - 1]);
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
  $('#session').addEventListener('change', (e) => {
    if (!e.target.value) return;
    state.chosen = true;
    loadSession(e.target.value);
  });
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
