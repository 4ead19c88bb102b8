/**
 * A protocol the proxy speaks, as the proxy's one request handler (proxyServer.ts) uses it:
 * how its requests are read, its answers and errors written, and its upstream called. The
 * session, tool and branch logic is the exchange's (exchange.ts), the same for every wire.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { HostLoopOptions } from '../session/hostLoop.js';
import type { Answer, ExchangeRequest, ExchangeSink } from './exchange.js';
import type { ModelUpstream } from './modelUpstream.js';
import type { Failure } from './modelUpstream.js';

/** What the proxy reads of any protocol's request besides what the exchange reads. */
export interface DoorRequest extends ExchangeRequest {
  /** The request as the client sent it (its stream flags aside), for a request passed through without a session. */
  body: Record<string, unknown>;
  stream: boolean;
  /** Who the client says its user is, when the protocol names one (a session's name). */
  user: string | null;
}

/** A request's body as it is passed on: its stream flags aside (the upstream is always streamed). */
export function passedOn(body: Record<string, unknown>): Record<string, unknown> {
  const { stream: _stream, stream_options: _options, ...rest } = body;
  return rest;
}

/** An error as every wire says it, then each in its own shape: OpenAI's names, or the upstream's own. */
export interface WireError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** A streamed answer: begun by the exchange, finished (or failed) and ended by the proxy. */
export interface ClientSink extends ExchangeSink {
  readonly begun: boolean;
  /** The client's calls, the finish and the usage. */
  finish(answer: Answer): void;
  /** A failure once the stream has begun, as the protocol sends one mid-stream. */
  fail(failure: Failure): void;
  end(): void;
}

/** What a protocol's errors look like, and where its requests come. */
export interface WireShape {
  /** Its route: POST to this path. */
  readonly path: string;
  /** The protocol's name, for messages. */
  readonly name: string;
  /** An error's body, answered with `status`. */
  error(status: number, error: WireError): unknown;
  /** An error after a stream's headers were sent: one event of the stream. */
  streamError(error: WireError): string;
}

export interface ClientWire<R extends DoorRequest> extends WireShape {
  /**
   * What its sessions are opened with: who speaks the protocol (`openai`, `anthropic`:
   * OpenTelemetry's gen_ai.provider.name), and how its upstream caches what they send
   * ('explicit' where the upstream requests carry cache breakpoints, else 'automatic').
   */
  readonly loop: Required<Pick<HostLoopOptions, 'provider' | 'caching'>>;
  /** The request, checked (a BadRequestError names what is wrong). */
  read(body: unknown, headers: IncomingHttpHeaders): R;
  /** Its model; null when the proxy was given none for this protocol. */
  readonly upstream: ModelUpstream<R> | null;
  /** The client's own credential, sent upstream with --forward-auth. */
  credential(headers: IncomingHttpHeaders): string | undefined;
  /** A streamed answer on `res`, with the proxy's headers. */
  stream(res: ServerResponse, headers: Record<string, string>, request: R): ClientSink;
  /** The whole answer of a request not streamed. */
  json(answer: Answer, request: R): unknown;
}
