/**
 * The session's events on their way out: secrets masked, stamped with the session and the
 * time, written to the trace, then handed to every listener of their type and of '*'. A
 * listener that throws is reported as a warning and never breaks the session.
 */
import type { SessionEvent, WorkmemEvent } from '../events.js';
import type { Redact } from '../secrets/redact.js';
import { redactEvent } from './eventRedaction.js';

type Listener = (event: WorkmemEvent) => void;

export class EventBus {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(
    private readonly sessionId: string,
    private readonly redact: Redact,
    private readonly now: () => number,
    /** Hears every event first (the trace recorder). */
    private readonly record?: (event: WorkmemEvent) => void,
    /** Where a throwing listener is reported (the host's warn); default a process warning. */
    private readonly warn: (message: string) => void = (message) => process.emitWarning(`workmem: ${message}`),
  ) {}

  on(type: string, listener: Listener): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Deliver an event; returns it as the listeners received it (masked and stamped). */
  publish(raw: SessionEvent): WorkmemEvent {
    const event = redactEvent(raw, this.redact);
    // Copied, then stamped: a spread followed by new fields gets fresh hidden classes each time (~1 KB an event).
    const stamped = Object.assign({}, event) as WorkmemEvent;
    stamped.sessionId = this.sessionId;
    stamped.ts = this.now();
    this.record?.(stamped);
    for (const set of [this.listeners.get(event.type), this.listeners.get('*')]) {
      for (const listener of set ?? []) {
        try {
          listener(stamped);
        } catch (error) {
          this.warn(`an event listener threw: ${(error as Error)?.message ?? error}`);
        }
      }
    }
    return stamped;
  }
}
