/**
 * Streams a session's trace records to a running `workmem viz` over a WebSocket on
 * 127.0.0.1, for the live view. It reconnects in the background; records made while it
 * is disconnected are dropped from the live view (they are in trace.jsonl).
 */
import WebSocket from 'ws';
import type { TraceRecord } from './traceRecorder.js';

export const DEFAULT_VIZ_PORT = 4900;
const QUEUE_LIMIT = 2_000;
const RETRY_MS = 2_000;

/** true → the default local address; a number → that port; a string → that URL. */
export function liveUrl(target: true | number | string): string {
  if (target === true) return `ws://127.0.0.1:${DEFAULT_VIZ_PORT}/ingest`;
  if (typeof target === 'number') return `ws://127.0.0.1:${target}/ingest`;
  return /^\d+$/.test(target) ? `ws://127.0.0.1:${target}/ingest` : target;
}

export class LiveLink {
  private socket: WebSocket | null = null;
  private queue: string[] = [];
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private warned = false;

  constructor(
    private readonly url: string,
    private readonly sessionId: string,
    private readonly warn: (message: string) => void = () => {},
  ) {
    this.connect();
  }

  send(record: TraceRecord): void {
    const message = JSON.stringify({ type: 'record', sessionId: this.sessionId, record });
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(message);
    else if (this.queue.length < QUEUE_LIMIT) this.queue.push(message);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.socket?.close();
  }

  private connect(): void {
    if (this.closed) return;
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'hello', sessionId: this.sessionId }));
      for (const message of this.queue.splice(0)) socket.send(message);
    });
    socket.on('error', (error) => {
      if (!this.warned) this.warn(`the visualizer at ${this.url} is not reachable (${error.message}); still trying`);
      this.warned = true;
    });
    socket.on('close', () => {
      if (this.closed) return;
      this.timer = setTimeout(() => this.connect(), RETRY_MS);
      this.timer.unref();
    });
  }
}
