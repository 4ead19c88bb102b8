/**
 * Streams a session's trace records to a running `workmem viz` over a WebSocket on
 * 127.0.0.1, for the live view. Before it sends anything of the session (not even its
 * id) it makes the listener prove it is the server this user started: the token comes
 * from the server's file in the user's own home, the listener answers a fresh nonce with
 * an HMAC of it, and only then does the link prove itself in turn and open the socket.
 * A listener that cannot prove it gets nothing. It reconnects in the background; records
 * made while it is disconnected are dropped from the live view (they are in trace.jsonl).
 */
import WebSocket from 'ws';
import { defaultHome } from '../storage/sessionPaths.js';
import type { TraceRecord } from './traceRecorder.js';
import { PROTOCOL, clientProof, newNonce, readTokenFile, sameSecret, serverProof, tokenDir } from './liveProtocol.js';

export const DEFAULT_VIZ_PORT = 4900;
const QUEUE_LIMIT = 2_000;
const RETRY_MS = 2_000;
const CHALLENGE_TIMEOUT_MS = 5_000;
/** How long close() lets a link that is proving itself deliver what is queued: a short run still shows live. */
const CLOSE_GRACE_MS = 3_000;

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
  private readonly warned = new Set<string>();
  /** True while a verified server was found and the socket is being opened (the queue will be sent). */
  private connecting = false;
  private drained: (() => void) | null = null;
  private readonly target: URL;
  private readonly port: number;

  constructor(
    url: string,
    private readonly sessionId: string,
    private readonly warn: (message: string) => void = () => {},
    /** Where the server's token file is: the home of the user who started `workmem viz`. */
    private readonly home: string = defaultHome(),
  ) {
    this.target = new URL(url);
    this.port = Number(this.target.port || (this.target.protocol === 'wss:' ? 443 : 80));
    void this.connect();
  }

  send(record: TraceRecord): void {
    const message = JSON.stringify({ type: 'record', record });
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(message);
    else if (this.queue.length < QUEUE_LIMIT) this.queue.push(message);
  }

  /** Stop. Records still queued for a server that is proving itself get up to `graceMs` to go out first. */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    if (this.closed) return;
    if (this.connecting && this.queue.length && graceMs > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        setTimeout(resolve, graceMs).unref();
      });
    }
    this.closed = true;
    this.drained = null;
    if (this.timer) clearTimeout(this.timer);
    this.socket?.close();
  }

  /** Each kind of trouble is said once, however often the link retries. */
  private warnOnce(kind: string, message: string): void {
    if (this.warned.has(kind)) return;
    this.warned.add(kind);
    this.warn(message);
  }

  private retry(): void {
    this.connecting = false;
    this.drained?.();
    if (this.closed) return;
    this.timer = setTimeout(() => void this.connect(), RETRY_MS);
    this.timer.unref();
  }

  /** The listener's proof over our nonce; its nonce for ours. null: no proof, and nothing was sent but the nonce. */
  private async verify(token: string): Promise<string | null> {
    const nonce = newNonce();
    const http = this.target.protocol === 'wss:' ? 'https:' : 'http:';
    const response = await fetch(`${http}//${this.target.host}/ingest/challenge?nonce=${nonce}`, {
      signal: AbortSignal.timeout(CHALLENGE_TIMEOUT_MS),
      redirect: 'error',
    });
    const body = (await response.json().catch(() => null)) as { proof?: unknown; nonce?: unknown } | null;
    if (!response.ok || typeof body?.proof !== 'string' || typeof body.nonce !== 'string') return null;
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(body.nonce)) return null;
    return sameSecret(body.proof, serverProof(token, this.port, nonce)) ? body.nonce : null;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const file = readTokenFile(this.home, this.port);
    if (!file) {
      this.warnOnce(
        'no-token',
        `no workmem viz of yours is running on port ${this.port} (no token in ${tokenDir(this.home)}); nothing sent, still looking`,
      );
      return this.retry();
    }
    this.connecting = true;
    let serverNonce: string | null;
    try {
      serverNonce = await this.verify(file.token);
    } catch (error) {
      this.warnOnce('unreachable', `the visualizer at ${this.target.origin} is not reachable (${(error as Error).message}); still trying`);
      return this.retry();
    }
    if (this.closed) return void this.drained?.();
    if (!serverNonce) {
      this.warnOnce('no-proof', `the listener on port ${this.port} is not the workmem viz you started (no valid proof); nothing sent`);
      return this.retry();
    }
    const socket = new WebSocket(this.target, [PROTOCOL, `proof.${serverNonce}.${clientProof(file.token, this.port, serverNonce)}`]);
    this.socket = socket;
    // The socket is a new connection: its 101 must prove again that it ends at the same server.
    let proven = false;
    socket.on('upgrade', (response) => {
      const proof = response.headers['x-workmem-proof'];
      proven = typeof proof === 'string' && sameSecret(proof, serverProof(file.token, this.port, `upgrade.${serverNonce}`));
    });
    socket.on('open', () => {
      if (!proven) {
        this.warnOnce('no-proof', `the listener on port ${this.port} is not the workmem viz you started (no valid proof); nothing sent`);
        return socket.terminate();
      }
      socket.send(JSON.stringify({ type: 'hello', sessionId: this.sessionId }));
      for (const message of this.queue.splice(0)) socket.send(message);
      this.connecting = false;
      this.drained?.();
    });
    socket.on('error', (error) => {
      this.warnOnce('unreachable', `the visualizer at ${this.target.origin} is not reachable (${error.message}); still trying`);
    });
    socket.on('close', () => this.retry());
  }
}
