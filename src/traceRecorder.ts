/**
 * trace.jsonl: what the visualizer replays. From the actors' inspection events it keeps
 * every microstep (snapshots alone miss pass-through states) with the transitions taken;
 * beside them the session's events and each new version of overview.md. Lines are
 * buffered and written at the end of each turn (no fsync: a trace is diagnostic; the
 * log is the record). Listeners (the live visualizer link) see every record.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { InspectionEvent } from 'xstate';
import { FILE_MODE } from './atomicWrite.js';
import type { WorkmemEvent } from './events.js';
import { transitionId } from './statechart.js';

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
  | { k: 'event'; ts: number; event: WorkmemEvent }
  | { k: 'memory'; ts: number; version: number; content: string; turn: number | null };

type Transition = Parameters<typeof transitionId>[0];
const FLUSH_LINES = 256;

export class TraceRecorder {
  private fd: number | null;
  private buffer: string[] = [];
  private readonly listeners = new Set<(record: TraceRecord) => void>();
  private lastMemory = -1;
  private turn: number | null = null;

  constructor(
    path: string,
    sessionId: string,
    resumed: boolean,
    private readonly now: () => number = Date.now,
  ) {
    this.fd = openSync(path, 'a', FILE_MODE);
    this.record({ k: 'header', format: TRACE_FORMAT, sessionId, ts: now(), resumed });
  }

  /** For createActor({ inspect }): every machine of the session system. */
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.microstep') return;
    const transitions = (event as unknown as { _transitions: Transition[] })._transitions;
    const machine = (event.actorRef as unknown as { logic?: { id?: string } }).logic?.id ?? 'unknown';
    const context = (event.snapshot as { context?: { turn?: unknown; request?: unknown } }).context;
    this.record({
      k: 'step',
      ts: this.now(),
      machine,
      event: event.event.type,
      transitions: transitions.map(transitionId),
      from: transitions.map((t) => t.source.id),
      to: transitions.flatMap((t) => (t.target ?? []).map((n: { id: string }) => n.id)),
      value: (event.snapshot as { value?: unknown }).value,
      turn: typeof context?.turn === 'number' ? context.turn : null,
      request: typeof context?.request === 'number' ? context.request : null,
    });
  };

  event(event: WorkmemEvent): void {
    if (event.type === 'message_delta') return; // the message itself comes with message_end
    if ('turn' in event && typeof event.turn === 'number') this.turn = event.turn;
    // Message bodies are in messages.jsonl; the trace keeps which message ended, and its size.
    const slim = event.type === 'message_end' ? ({ ...event, message: { role: event.message.role } } as WorkmemEvent) : event;
    this.record({ k: 'event', ts: event.ts, event: slim });
    if (event.type === 'turn_end') this.flush();
  }

  memory(version: number, content: string): void {
    if (version === this.lastMemory) return;
    this.lastMemory = version;
    this.record({ k: 'memory', ts: this.now(), version, content, turn: this.turn });
  }

  onRecord(listener: (record: TraceRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  flush(): void {
    if (this.fd === null || this.buffer.length === 0) return;
    const text = this.buffer.join('');
    this.buffer = [];
    try {
      writeSync(this.fd, text);
    } catch {
      // A full disk must not stop the session: the trace loses these lines, the log keeps everything.
    }
  }

  close(): void {
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private record(record: TraceRecord): void {
    if (this.fd === null) return;
    this.buffer.push(`${JSON.stringify(record)}\n`);
    for (const listener of this.listeners) listener(record);
    if (this.buffer.length >= FLUSH_LINES) this.flush();
  }
}
