/**
 * The trace: what the visualizer replays. From the actors' inspection events it keeps
 * every microstep (snapshots alone miss pass-through states) with the transitions taken;
 * beside them the session's events and each new version of overview.md. Lines are
 * buffered and handed to the store's TraceWriter (trace.jsonl beside the session, or the
 * database's trace table) within FLUSH_DELAY_MS of a turn's end, in one batch for however
 * many turns ended meanwhile (no fsync, nothing awaited: a trace is diagnostic; the log is the record).
 * Listeners (the live visualizer link) see every record at once. A request that brings a
 * long run of records (a first request's 20k messages) has them taken a slice at a time
 * (the backlog), so that tracing it never holds the event loop long.
 */
import type { InspectionEvent } from 'xstate';
import type { TraceWriter } from '../storage/sessionStore.js';
import type { WorkmemEvent } from '../events.js';
import { yieldIfBusy } from '../runtime/fairYield.js';
import { transitionId } from './transitionId.js';
import { TakenTransitions } from './takenTransitions.js';
import { SentMessages, type SentRecord } from './sentMessages.js';
import { HostMessages, type HostCallSent, type HostRecord } from './hostMessages.js';

export const TRACE_FORMAT = 1;

export type TraceRecord =
  | { k: 'header'; format: number; sessionId: string; ts: number; resumed: boolean }
  | {
      k: 'step';
      ts: number;
      machine: string;
      event: string;
      transitions: string[];
      from: string[];
      to: string[];
      value: unknown;
      turn: number | null;
      request: number | null;
    }
  | { k: 'event'; ts: number; event: TracedEvent }
  | { k: 'memory'; ts: number; version: number; content: string; turn: number | null }
  | SentRecord
  | HostRecord;

type Transition = Parameters<typeof transitionId>[0];
/** A session event as traced: without its session id (the header has it). */
export type TracedEvent = WorkmemEvent extends infer E ? (E extends WorkmemEvent ? Omit<E, 'sessionId'> : never) : never;
const FLUSH_LINES = 512;
/** Or this many characters: a system record carries the memory (tens of KB), and 512 of them held ~19 MB. */
const FLUSH_CHARS = 256 * 1024;
const FLUSH_DELAY_MS = 100;
/** A request's records beyond this many go through the backlog. */
const SLICE = 64;

/** A transition's id, source and targets, as JSON fragments: computed once per transition. */
interface TransitionJson {
  id: string;
  from: string;
  to: string;
}
const transitionJson = new WeakMap<Transition, TransitionJson>();

function jsonOf(t: Transition): TransitionJson {
  let json = transitionJson.get(t);
  if (!json) {
    const to = (t.target ?? []).map((n: { id: string }) => JSON.stringify(n.id)).join(',');
    json = { id: JSON.stringify(transitionId(t)), from: JSON.stringify(t.source.id), to };
    transitionJson.set(t, json);
  }
  return json;
}

/** Tool arguments and outputs can be large; the log has them whole, the trace a glimpse. */
const CLIP_CHARS = 4_000;
function clip(text: string): string {
  return text.length <= CLIP_CHARS
    ? text
    : `${text.slice(0, CLIP_CHARS)}… [${(text.length - CLIP_CHARS).toLocaleString('en-US')} more characters]`;
}

const strings = new Map<string, string>();
/** Machine ids and event types repeat on every line: quote each once. */
function quoted(s: string): string {
  let q = strings.get(s);
  if (q === undefined) {
    q = JSON.stringify(s);
    if (strings.size < 1_000) strings.set(s, q);
  }
  return q;
}

export class TraceRecorder {
  private writer: TraceWriter | null;
  private buffer: string[] = [];
  private buffered = 0;
  private readonly listeners = new Set<(record: TraceRecord) => void>();
  private lastMemory = -1;
  private turn: number | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly taken = new TakenTransitions();
  private readonly sent = new SentMessages();
  private readonly hosted = new HostMessages();
  /** This run's header: a listener gets it first. */
  private header: TraceRecord | null = null;
  /** Records and lines waiting behind a long run of records, taken a slice at a time. */
  private backlog: (TraceRecord | string)[] = [];
  private draining = false;

  constructor(
    writer: TraceWriter,
    sessionId: string,
    resumed: boolean,
    private readonly now: () => number = Date.now,
    private readonly redact: (line: string) => string = (line) => line,
  ) {
    this.writer = writer;
    this.record({ k: 'header', format: TRACE_FORMAT, sessionId, ts: now(), resumed });
  }

  /**
   * For createActor({ inspect }): every machine of the session system. Microsteps come
   * twenty to a turn, so their line is assembled from cached fragments; the record
   * object is built only for live listeners.
   */
  readonly inspect = (event: InspectionEvent): void => {
    const transitions = this.taken.see(event) as Transition[] | null;
    if (transitions === null || event.type !== '@xstate.microstep' || this.writer === null) return;
    const machine = (event.actorRef as unknown as { logic?: { id?: string } }).logic?.id ?? 'unknown';
    const context = (event.snapshot as { context?: { turn?: unknown; request?: unknown } }).context;
    const value = (event.snapshot as { value?: unknown }).value;
    const turn = typeof context?.turn === 'number' ? context.turn : null;
    const request = typeof context?.request === 'number' ? context.request : null;
    // What a request carries, on entering buildPrompt: the prompt is final there (see sentMessages.ts).
    if (machine === 'turn' && value === 'buildPrompt') this.recordAll(this.sent.records(context, this.now()));
    const ts = this.now();
    let ids = '';
    let from = '';
    let to = '';
    for (const t of transitions) {
      const json = jsonOf(t);
      ids += ids ? `,${json.id}` : json.id;
      from += from ? `,${json.from}` : json.from;
      if (json.to) to += to ? `,${json.to}` : json.to;
    }
    const valueJson = typeof value === 'string' ? quoted(value) : JSON.stringify(value ?? null);
    this.push(
      `{"k":"step","ts":${ts},"machine":${quoted(machine)},"event":${quoted(event.event.type)},"transitions":[${ids}],"from":[${from}],"to":[${to}],"value":${valueJson},"turn":${turn},"request":${request}}\n`,
    );
    if (this.listeners.size === 0) return;
    const record: TraceRecord = {
      k: 'step',
      ts,
      machine,
      event: event.event.type,
      transitions: transitions.map(transitionId),
      from: transitions.map((t) => t.source.id),
      to: transitions.flatMap((t) => (t.target ?? []).map((n: { id: string }) => n.id)),
      value,
      turn,
      request,
    };
    for (const listener of this.listeners) listener(record);
  };

  event(event: WorkmemEvent): void {
    if (event.type === 'message_delta') return; // the message itself comes with message_end
    if ('turn' in event && typeof event.turn === 'number') this.turn = event.turn;
    // Message bodies are in messages.jsonl; the trace keeps which message ended, and its size.
    // The session id is the header's, once.
    const { sessionId: _, ...rest } = event;
    const slim = (
      event.type === 'message_end'
        ? { ...rest, message: { role: event.message.role } }
        : event.type === 'tool_start'
          ? { ...rest, arguments: clip(event.arguments) }
          : event.type === 'tool_end'
            ? { ...rest, content: clip(event.content) }
            : event.type === 'turn_start' || event.type === 'turn_end'
              ? { ...rest, text: clip(event.text) }
              : rest
    ) as TracedEvent;
    this.record({ k: 'event', ts: event.ts, event: slim });
    if (event.type === 'turn_end' && !this.flushTimer) {
      this.flushTimer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
      this.flushTimer.unref();
    }
  }

  /** What a host's loop sent with a model call (hostMessages.ts). */
  host(call: HostCallSent): void {
    if (this.writer === null) return;
    this.recordAll(this.hosted.records(call, this.now()));
  }

  memory(version: number, content: string): void {
    if (version === this.lastMemory) return;
    this.lastMemory = version;
    this.record({ k: 'memory', ts: this.now(), version, content, turn: this.turn });
  }

  /** A listener gets this run's header first (the live view aligns the stream with the file by it), then every record. */
  onRecord(listener: (record: TraceRecord) => void): () => void {
    if (this.header) listener(this.header);
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.writer === null || this.buffer.length === 0) return;
    const lines = this.buffer;
    this.buffer = [];
    this.buffered = 0;
    // Never throws, never waits: a full disk or a lost connection loses trace lines, the log keeps everything.
    this.writer.write(lines);
  }

  /** Hand over what is buffered (the backlog first, at once); the store's close() stores it. */
  close(): void {
    const backlog = this.backlog;
    this.backlog = [];
    for (const item of backlog) this.take(item);
    this.flush();
    this.writer = null;
  }

  /**
   * Records of one request: a long run of them (the 20k messages of a conversation a first
   * request brings) goes into the backlog, and everything after it waits there in order.
   */
  private recordAll(records: readonly TraceRecord[]): void {
    if (records.length <= SLICE && this.backlog.length === 0) {
      for (const record of records) this.record(record);
      return;
    }
    for (const record of records) this.backlog.push(record);
    void this.drainBacklog();
  }

  /** The backlog, a record at a time, the loop let go round between slices (fairYield.ts). */
  private async drainBacklog(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const backlog = this.backlog;
    try {
      // Records queued while it drains join the same array; close() takes it over.
      for (let i = 0; i < backlog.length && this.backlog === backlog; i++) {
        this.take(backlog[i]!);
        await yieldIfBusy();
      }
      if (this.backlog === backlog) this.backlog = [];
    } finally {
      this.draining = false;
    }
  }

  private take(item: TraceRecord | string): void {
    if (typeof item === 'string') this.bufferLine(item);
    else this.stored(item);
  }

  private record(record: TraceRecord): void {
    if (this.backlog.length) this.backlog.push(record);
    else this.stored(record);
  }

  private stored(record: TraceRecord): void {
    if (this.writer === null) return;
    const json = `${JSON.stringify(record)}\n`;
    const line = this.redact(json);
    this.push(line);
    if (record.k === 'header') this.header = record;
    if (this.listeners.size === 0) return;
    const shown = line === json ? record : (JSON.parse(line) as TraceRecord);
    for (const listener of this.listeners) listener(shown);
  }

  /** `line` is redacted already (or, for microsteps, holds only state and event names). */
  private push(line: string): void {
    if (this.backlog.length) this.backlog.push(line);
    else this.bufferLine(line);
  }

  private bufferLine(line: string): void {
    this.buffer.push(line);
    this.buffered += line.length;
    if (this.buffer.length >= FLUSH_LINES || this.buffered >= FLUSH_CHARS) this.flush();
  }
}
