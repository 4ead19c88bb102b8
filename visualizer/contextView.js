// The context view: what one request sent, message by message, grouped as the prompt is
// built (system prompt, working memory, detail index, history, tail; with the memory after
// the history: system prompt, history, working memory, detail index, tail), with the window as
// a stacked bar and the compactions that shaped the history. Pinned messages (never
// compacted, sent first when older than the history a mode carries) are marked where they
// are sent, and their share drawn in the bar. Built from the trace's
// `system`, `message` and `request` records (src/viz/sentMessages.ts); text only, never markup.

import { el } from './dom.js';

const num = (v) => (Number.isFinite(Number(v)) ? Number(v) : 0);
const fmt = (n) => num(n).toLocaleString('en-US');

/** The system message cut where the prompt builder joined it: prompt, memory block, detail index. */
export function splitSystem(content) {
  const text = String(content ?? '');
  const memory = text.indexOf('<working_memory');
  const index = text.indexOf('<detail_index>');
  if (memory < 0) return { prompt: text, memory: '', index: '' };
  const cut = index > memory ? index : text.length;
  return { prompt: text.slice(0, memory), memory: text.slice(memory, cut), index: text.slice(cut) };
}

/** The tail cut into <context_meta> and the reminder that follows it, when due. */
export function splitTail(tail) {
  const text = String(tail ?? '');
  const reminder = text.indexOf('<memory_reminder');
  return reminder < 0 ? { meta: text, reminder: '' } : { meta: text.slice(0, reminder), reminder: text.slice(reminder) };
}

/** The seqs a request record names, in order. */
export function seqsOf(request) {
  const out = [];
  for (const run of request.seqs ?? []) for (let i = 0; i < num(run[1]); i++) out.push(num(run[0]) + i);
  return out;
}

function firstLines(text, lines = 2, chars = 160) {
  const all = String(text ?? '').split('\n').filter((l) => l.trim() !== '');
  const shown = all.slice(0, lines).join(' ⏎ ');
  const cut = shown.length > chars ? `${shown.slice(0, chars)}…` : shown;
  return all.length > lines ? `${cut} (+${all.length - lines} lines)` : cut;
}

/**
 * One part of a message as sent: its role, where it comes from, its tokens and its first
 * lines; expanded, its whole text. `message` is the index of the message in the request:
 * a message cut in parts (the system message, the last message and its tail) is its parts joined.
 */
function part({ message, role, label, tokens, text, calls = [], seq = null, pinned = false }) {
  const summary = el(
    'summary',
    {},
    el('span', { class: `role ${role}` }, role),
    ' ',
    pinned ? el('span', { class: 'pin', title: 'pinned: every request carries it, no compaction replaces it' }, 'pinned') : '',
    pinned ? ' ' : '',
    el('span', { class: 'label' }, label),
    ' ',
    el('span', { class: 'tokens', 'data-tokens': tokens ?? '' }, tokens == null ? '' : `${fmt(tokens)} tok`),
    ' ',
    el('span', { class: 'first' }, firstLines(text) || (calls.length ? calls.map((c) => `${c.function?.name}(…)`).join(', ') : '(empty)')),
  );
  const body = el('pre', { class: 'body' }, String(text ?? ''));
  const callList = calls.map((c) => el('pre', { class: 'call', 'data-name': c.function?.name ?? '' }, `${c.function?.name}(${c.function?.arguments ?? ''})`));
  const attributes = { class: pinned ? 'part pinned' : 'part', 'data-message': message, 'data-role': role };
  if (seq != null) attributes['data-seq'] = seq;
  if (pinned) attributes['data-pinned'] = '1';
  return el('details', attributes, summary, body, ...callList);
}

function group(name, title, tokens, ...children) {
  return el(
    'section',
    { class: 'group', 'data-group': name },
    el('h3', {}, title, ' ', el('span', { class: 'tokens', 'data-tokens': tokens ?? '' }, tokens == null ? '' : `${fmt(tokens)} tokens`)),
    ...children,
  );
}

/** The window as one bar: each part of the request, the free space, the reserved output; the 75 % line over it. */
function windowBar(tokens, reserved, pinned) {
  const window = Math.max(1, num(tokens.window));
  const parts = [
    ['system', 'system prompt', num(tokens.system)],
    ['memory', 'working memory + detail index', num(tokens.memory)],
    ['pinned', 'pinned messages', pinned],
    ['history', pinned ? 'rest of the history' : 'history', num(tokens.history) - pinned],
    ['tail', 'tail', num(tokens.tail)],
    ['calibration', 'server correction', Math.max(0, num(tokens.calibration))],
  ];
  const used = num(tokens.total);
  const out = reserved == null ? 0 : num(reserved);
  const free = Math.max(0, window - used - out);
  const bar = el('div', { class: 'bar', role: 'img', 'aria-label': `${fmt(used)} of ${fmt(window)} tokens used` });
  const pct = (n) => `${((100 * n) / window).toFixed(3)}%`;
  for (const [kind, label, n] of parts) {
    if (n > 0) bar.append(el('span', { class: `seg ${kind}`, title: `${label}: ${fmt(n)} tokens`, 'data-width': pct(n) }));
  }
  if (free > 0) bar.append(el('span', { class: 'seg free', title: `free: ${fmt(free)} tokens`, 'data-width': pct(free) }));
  if (out > 0) bar.append(el('span', { class: 'seg reserved', title: `reserved for the answer: ${fmt(out)} tokens`, 'data-width': pct(Math.min(out, window)) }));
  bar.append(el('span', { class: 'line75', title: '75 % of the window', 'data-left': '75%' }));
  // The CSP allows no inline style attribute values set from markup: sizes go through the CSSOM.
  for (const seg of bar.querySelectorAll('[data-width]')) seg.style.width = seg.dataset.width;
  for (const line of bar.querySelectorAll('[data-left]')) line.style.left = line.dataset.left;
  const keys = el(
    'p',
    { class: 'bar-keys' },
    ...parts.filter(([, , n]) => n > 0).flatMap(([kind, label, n]) => [el('span', { class: `key ${kind}` }), `${label} ${fmt(n)} · `]),
    el('span', { class: 'key free' }),
    `free ${fmt(free)} · `,
    el('span', { class: 'key reserved' }),
    reserved == null ? 'reserved output: not recorded' : `reserved output ${fmt(out)}`,
    ` · used ${fmt(used)} of ${fmt(window)} (${num(tokens.percent)} %), 75 % line at ${fmt(Math.round(window * 0.75))}`,
  );
  return el('div', { class: 'window' }, bar, keys);
}

/**
 * view: { request, built, systems, bodies, previous, compactions, usage, loadFile }
 * `compactions` are the compaction_end events between the previous request and this one.
 */
export function renderContext(box, caption, view) {
  const { request, built, systems, bodies, previous, compactions } = view;
  if (!request) {
    caption.textContent = '';
    const why = built
      ? 'This trace records the token breakdown of this request but not its messages (recorded by an older workmem).'
      : 'No request yet at this step.';
    box.replaceChildren(el('p', { class: 'muted' }, why));
    return;
  }
  const tokens = request.tokens ?? {};
  const seqs = seqsOf(request);
  // After the history, the memory block opens the last message: cut it as the system message would be.
  const afterHistory = systems.afterHistory?.get(request.system);
  const system = afterHistory == null ? splitSystem(systems.get(request.system)) : { ...splitSystem(afterHistory), prompt: String(systems.get(request.system) ?? '') };
  const memoryAt = afterHistory == null ? 0 : seqs.length;
  const tail = splitTail(request.tail);
  const detailTokens = systems.detailIndexTokens?.get(request.system);
  caption.textContent = `turn ${request.turn}, request ${request.request} · ${request.mode} · ${seqs.length + 1} messages · ${fmt(tokens.total)} tokens (${num(tokens.percent)} %)`;

  let pinnedCount = 0;
  let pinnedTokens = 0;
  const history = seqs.map((seq, i) => {
    const versions = bodies.get(seq) ?? [];
    const body = versions.filter((v) => v.idx < request.idx).at(-1)?.record;
    const message = body?.message ?? { role: 'unknown', content: '(not in this trace)' };
    const pinned = body?.pinned === true;
    if (pinned) (pinnedCount++, (pinnedTokens += num(body.tokens)));
    return part({
      message: i + 1,
      role: message.role,
      label: `#${seq} · turn ${body?.turn ?? '?'}`,
      tokens: body?.tokens,
      text: message.content ?? '',
      calls: message.tool_calls ?? [],
      seq,
      pinned,
    });
  });
  const last = seqs.length;
  const memoryTokens = detailTokens == null ? num(tokens.memory) : num(tokens.memory) - num(detailTokens);
  const dropped = previous ? seqsOf(previous).filter((s) => !seqs.includes(s)) : [];
  // The pinned messages older than the window are sent first: the range is the window's.
  const first = built ? (built.pinned ?? []).filter((i) => i < num(built.range?.[0])).length : 0;
  const carried = seqs.slice(first);
  const range = `${first ? `${first} pinned first, then ` : ''}${carried.length ? `#${carried[0]}–#${carried[carried.length - 1]}` : 'none'}`;

  const notebook = [
    group(
      'memory',
      'Working memory',
      memoryTokens,
      part({ message: memoryAt, role: memoryAt ? 'memory' : 'system', label: 'working-memory/overview.md', tokens: memoryTokens, text: system.memory }),
      memoryAt ? el('p', { class: 'muted' }, 'sent after the history, before the last message (memoryPosition after-history or by-phase)') : '',
    ),
    group(
      'index',
      'Detail index',
      detailTokens ?? null,
      part({ message: memoryAt, role: memoryAt ? 'memory' : 'system', label: 'working-memory/detail/ files', tokens: detailTokens ?? null, text: system.index }),
      detailTokens == null ? el('p', { class: 'muted' }, 'counted with the working memory') : '',
    ),
  ];
  // After the history the memory opens the last message: that message is shown after it, in a group of its own.
  const earlier = memoryAt ? history.slice(0, -1) : history;
  const lastTokens = memoryAt ? num(bodies.get(seqs.at(-1))?.filter((v) => v.idx < request.idx).at(-1)?.record.tokens) : 0;
  const historyGroup = group(
    'history',
    `History · ${request.mode} · ${earlier.length} messages (${range})${memoryAt ? ', the last after the working memory' : ''}` +
      (pinnedCount ? ` · ${pinnedCount} pinned (${fmt(pinnedTokens)} tokens, never compacted)` : ''),
    num(tokens.history) - lastTokens,
    ...earlier,
    dropped.length ? el('p', { class: 'muted dropped' }, `no longer sent since the previous request: ${dropped.map((s) => `#${s}`).join(', ')}`) : '',
  );
  const lastGroup = memoryAt ? [group('last', 'Last message (history)', lastTokens, history.at(-1))] : [];
  const children = [
    windowBar(tokens, request.reserved, pinnedTokens),
    ...cacheLines(view.usage, tokens, request.turn),
    group(
      'system',
      'System prompt',
      num(tokens.system),
      part({ message: 0, role: 'system', label: 'instructions and tools', tokens: num(tokens.system), text: system.prompt }),
    ),
    // In the order the request carries them.
    ...(memoryAt ? [historyGroup, ...notebook, ...lastGroup] : [...notebook, historyGroup]),
    group(
      'tail',
      'Tail',
      num(tokens.tail),
      part({ message: last, role: 'tail', label: 'context_meta (appended to the last message)', tokens: null, text: tail.meta }),
      tail.reminder ? part({ message: last, role: 'tail', label: 'memory reminder', tokens: null, text: tail.reminder }) : '',
    ),
  ];
  if (num(tokens.calibration) !== 0)
    children.push(el('p', { class: 'muted' }, `server correction: ${num(tokens.calibration) > 0 ? '+' : ''}${fmt(tokens.calibration)} tokens (the server's last count minus ours)`));
  if (compactions.length) children.push(compactionList(compactions, view.loadFile));
  if (!view.host) return box.replaceChildren(...children);
  // A host's loop (the proxy's client) sent its own conversation: shown beside what went upstream.
  box.replaceChildren(
    el(
      'div',
      { class: 'sides' },
      clientSide(view.host, view.instructions, bodies),
      el('div', { class: 'side', 'data-side': 'upstream' }, el('h3', { class: 'side-title' }, 'Sent upstream'), ...children),
    ),
  );
}

/** workmem's own tools (src/history/hostLine.ts): their calls and results never reach the proxy's client. */
const WORKMEM_TOOLS = new Set(['read', 'write', 'edit', 'compact_history', 'remember', 'recall', 'forget']);

/** What the host sent with this call: its instructions, then the log messages its conversation stands for, as first recorded. */
function clientSide(host, instructions, bodies) {
  const parts = [];
  if (host.instructions != null)
    parts.push(part({ message: 0, role: 'system', label: 'its instructions', tokens: null, text: instructions?.get(host.instructions) ?? '(not in this trace)' }));
  const ours = new Set();
  seqsOf(host).forEach((seq, i) => {
    const body = (bodies.get(seq) ?? [])[0]?.record;
    const message = body?.message ?? { role: 'unknown', content: '(not in this trace)' };
    const calls = message.tool_calls ?? [];
    for (const c of calls) if (WORKMEM_TOOLS.has(c.function?.name)) ours.add(c.id);
    const hidden = message.role === 'tool' ? ours.has(message.tool_call_id) : calls.length > 0 && calls.every((c) => WORKMEM_TOOLS.has(c.function?.name));
    const shown = part({
      message: i + 1,
      role: message.role,
      label: `#${seq}${hidden ? ' · workmem’s tools, run in the proxy: folded into the answer the client holds' : ''}`,
      tokens: body?.tokens,
      text: message.content ?? '',
      calls: calls.filter((c) => !WORKMEM_TOOLS.has(c.function?.name)),
      seq,
    });
    if (hidden) shown.classList.add('workmem');
    parts.push(shown);
  });
  return el('div', { class: 'side', 'data-side': 'client' }, el('h3', { class: 'side-title' }, `Client sent · ${fmt(host.sent)} messages`), ...parts);
}

/** The provider's prompt cache: what it served of the turn's input (turn_end's usage), and the prefix it could serve. */
function cacheLines(usage, tokens, turn) {
  const lines = [];
  if (usage && num(usage.input) > 0) {
    const share = Math.round((100 * num(usage.cached)) / num(usage.input));
    lines.push(
      el(
        'p',
        { class: 'cached', 'data-cached': num(usage.cached) },
        `cached: ${fmt(usage.cached)} of ${fmt(usage.input)} input tokens (${share} %) over the ${fmt(usage.requests)} requests of turn ${turn}, as the server reported`,
      ),
    );
  }
  if (tokens.cacheable != null && Number.isFinite(Number(tokens.cacheable)))
    lines.push(el('p', { class: 'muted cacheable' }, `cacheable prefix (everything before the last message): ${fmt(tokens.cacheable)} tokens`));
  return lines;
}

function compactionList(compactions, loadFile) {
  return el(
    'section',
    { class: 'group compactions', 'data-group': 'compaction' },
    el('h3', {}, 'Compacted just before this request'),
    ...compactions.map((e) =>
      el(
        'div',
        { class: 'compaction' },
        el('p', {}, `${e.reason}: ${fmt(e.replaced)} items archived, history ${fmt(e.tokensBefore)} → ${fmt(e.tokensAfter)} tokens, to `),
        ...[].concat(e.files ?? []).map((file) => fileLink(String(file), loadFile)),
      ),
    ),
  );
}

/** A detail file, opened in place (the API needs the token: a plain link could not carry it). */
function fileLink(file, loadFile) {
  const body = el('pre', { class: 'body file' }, '');
  const box = el('details', { class: 'file-link', 'data-file': file }, el('summary', {}, file), body);
  box.addEventListener('toggle', async () => {
    if (!box.open || body.dataset.loaded) return;
    body.dataset.loaded = '1';
    body.textContent = 'loading…';
    body.textContent = await loadFile(file).catch((error) => `could not open ${file}: ${error.message}`);
  });
  return box;
}
