// What a trace's records say, ordered by step: steps, requests (each with what it sent and
// the compactions just before it), markers and memory versions. Pure: records in, model out.

export function traceModel(records) {
  const steps = [];
  const requests = [];
  const markers = [];
  const memories = [];
  const systems = new Map();
  systems.detailIndexTokens = new Map();
  // With the memory after the history: the memory block that opened the last message, by the same hash.
  systems.afterHistory = new Map();
  const bodies = new Map();
  // What a host's loop sent (the proxy's client): its instructions by hash, and the last call's record.
  const instructions = new Map();
  let host = null;
  let sent = null; // the request record waiting for its prompt_built
  let compactions = [];
  records.forEach((r, idx) => {
    if (r.k === 'step') steps.push(r);
    else if (r.k === 'memory') memories.push({ ...r, at: steps.length - 1 });
    else if (r.k === 'system') {
      systems.set(r.hash, r.content);
      systems.detailIndexTokens.set(r.hash, r.detailIndexTokens);
      if (typeof r.memory === 'string') systems.afterHistory.set(r.hash, r.memory);
    } else if (r.k === 'message') {
      // A seq can be traced again (a compaction stubbed it): each request reads the version it sent.
      if (!bodies.has(r.seq)) bodies.set(r.seq, []);
      bodies.get(r.seq).push({ idx, record: r });
    } else if (r.k === 'request') {
      // Its prompt_built may have come first (a session's events reach the trace before the step that built it).
      const built = requests.at(-1);
      if (built && !built.sent && built.event.turn === r.turn && built.event.request === r.request) built.sent = { ...r, idx };
      else sent = { ...r, idx };
    }
    else if (r.k === 'instructions') instructions.set(r.hash, r.content);
    else if (r.k === 'host') host = { ...r, idx };
    else if (r.k === 'header') host = null;
    else if (r.k === 'event') {
      const e = r.event;
      if (e.type === 'prompt_built') {
        // A request record comes just before its prompt_built, or just after it (a request built twice, after an overflow, has two).
        const match = sent && sent.turn === e.turn && sent.request === e.request ? sent : null;
        requests.push({ event: e, at: steps.length - 1, sent: match, compactions, host });
        sent = null;
        compactions = [];
      }
      if (e.type === 'compaction_end' && e.replaced > 0) compactions.push(e);
      // What the server reported for the turn's requests (issue 16): the cached share is the turn's.
      if (e.type === 'turn_end' && e.usage) for (const q of requests) if (q.event.turn === e.turn) q.turnUsage = { ...e.usage, requests: e.requests };
      const kind = { reminder: 'reminder', memory_updated: 'memory', mode_changed: 'mode', compaction_end: 'compaction' }[e.type];
      if (kind && !(e.type === 'compaction_end' && e.replaced === 0)) markers.push({ kind, event: e, at: steps.length - 1, request: requests.length });
    }
  });
  return { steps, requests, markers, memories, systems, bodies, instructions };
}

/**
 * A live session's trace: what the file holds before this run's header (earlier runs),
 * then this run as streamed. The file holds a prefix of this run at most (it lags up to a
 * turn behind). A stream that does not start with its header (too long to keep) adds nothing.
 */
export function withStream(file, stream) {
  const header = stream[0];
  if (header?.k !== 'header') return file;
  const start = file.findLastIndex((r) => r.k === 'header' && r.ts === header.ts && r.sessionId === header.sessionId);
  return [...(start < 0 ? file : file.slice(0, start)), ...stream];
}
