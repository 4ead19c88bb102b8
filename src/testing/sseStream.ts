/** The test server's answers on the wire: a reply as SSE frames (Chat Completions chunks, or another protocol's events), written with the faults asked for. */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Fault } from './faults.js';
import { corruptStream, pieces as bytePieces } from './streamCorruption.js';
import type { PolicyReply } from './wire.js';

export interface Completion {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string;
}

export function completionOf(reply: PolicyReply): Completion {
  const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? `call_${randomBytes(8).toString('hex')}${i}`,
    name: c.name,
    arguments: c.arguments,
  }));
  return {
    content: reply.content ?? (toolCalls.length ? null : ''),
    toolCalls,
    finishReason: reply.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
  };
}

export function applyReplyFaults(reply: PolicyReply, faults: Fault[]): PolicyReply {
  let out = reply;
  if (faults.some((f) => f.type === 'empty')) out = { content: '', toolCalls: [] };
  if (faults.some((f) => f.type === 'malformed_tool_json')) {
    const calls = out.toolCalls?.length
      ? out.toolCalls
      : [{ name: 'write', arguments: '{"path":"working-memory/overview.md","content":"x"}' }];
    out = {
      ...out,
      toolCalls: calls.map((c, i) =>
        i === 0 ? { ...c, arguments: c.arguments.slice(0, Math.max(1, Math.floor(c.arguments.length / 2))) } : c,
      ),
    };
  }
  const finish = faults.find((f): f is Extract<Fault, { type: 'finish_reason' }> => f.type === 'finish_reason');
  if (finish) out = { ...out, finishReason: finish.value };
  return out;
}

export function wireToolCalls(calls: Completion['toolCalls']) {
  return calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
}

/** Logprobs of a text as OpenAI gives them when asked (`logprobs: true`): each piece a token, with its bytes. */
export function logprobsOf(pieces: readonly string[]): { content: Record<string, unknown>[]; refusal: null } {
  return {
    content: pieces.map((token, i) => ({ token, logprob: -0.01 * (i + 1), bytes: [...Buffer.from(token)], top_logprobs: [] })),
    refusal: null,
  };
}

/** The pieces a text streams in (and its logprobs' tokens). */
export function textPieces(text: string, size: number): string[] {
  return pieces(text, size);
}

/** The `choices[0]` of each chunk, as OpenAI streams them (each text piece with its logprobs when asked for). */
export function streamChunks(completion: Completion, size: number, withLogprobs = false): Record<string, unknown>[] {
  const choice = (delta: Record<string, unknown>, finish: string | null = null, logprobs: unknown = null) => ({
    index: 0,
    delta,
    logprobs,
    finish_reason: finish,
  });
  const out = [choice({ role: 'assistant', content: completion.toolCalls.length && !completion.content ? null : '', refusal: null })];
  for (const piece of pieces(completion.content ?? '', size))
    out.push(choice({ content: piece }, null, withLogprobs ? logprobsOf([piece]) : null));
  completion.toolCalls.forEach((call, index) => {
    out.push(choice({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(call.arguments, size)) out.push(choice({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  out.push(choice({}, completion.finishReason));
  return out;
}

/**
 * A streamed answer as its protocol frames it: each event as written, what ends the stream,
 * and the frames the endless, keep-alive, thinking and finish-flood faults write.
 */
export interface SseFrames {
  frames: string[];
  /** Written after the last frame: `data: [DONE]` for Chat Completions, nothing for the others. */
  done: string;
  /** How many frames open the answer before its text (an endless or keep-alive answer writes them, then its own). */
  opening: number;
  /** A text delta (the endless fault). */
  text(text: string): string;
  /** A frame that says nothing (the keep-alive fault); null: the protocol has none, a pause is written instead. */
  idle: string | null;
  /** A reasoning delta (the thinking fault). */
  thinking: string;
  /** The finish frame, which the finish-flood fault repeats, and how many frames end with it. */
  finish: { frame: string; through: number };
}

/** A Chat Completions stream's chunks as SSE frames. */
export function chatFrames(chunks: unknown[]): SseFrames {
  const data = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
  const first = chunks[0] as { choices: Record<string, unknown>[] };
  const delta = (d: Record<string, unknown>) => data({ ...first, choices: [{ ...first.choices[0], delta: d }] });
  const answer = chunks.filter((c) => (c as { choices: unknown[] }).choices.length > 0);
  return {
    frames: chunks.map(data),
    done: 'data: [DONE]\n\n',
    opening: 1,
    text: (text) => delta({ content: text }),
    idle: data({ ...first, choices: [] }),
    thinking: delta({ reasoning_content: 'thinking… ' }),
    finish: { frame: data(answer.at(-1)), through: answer.length },
  };
}

export async function writeStream(res: ServerResponse, chunks: unknown[], faults: Fault[], delayMs: number): Promise<void> {
  return writeFrames(res, chatFrames(chunks), faults, delayMs);
}

/** An answer's frames, written with the faults asked for. */
export async function writeFrames(res: ServerResponse, sse: SseFrames, faults: Fault[], delayMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const corrupt = faults.find((f): f is Extract<Fault, { type: 'corrupt' }> => f.type === 'corrupt');
  if (corrupt) return writeCorrupted(res, sse.frames.join('') + sse.done, corrupt.seed);
  let closed = false;
  res.on('close', () => (closed = true));
  const endless = faults.find(
    (f): f is Extract<Fault, { type: 'endless' | 'keepalive' }> => f.type === 'endless' || f.type === 'keepalive',
  );
  if (endless) return writeForever(res, sse, endless, () => closed);
  const flood = faults.find((f): f is Extract<Fault, { type: 'finish_flood' }> => f.type === 'finish_flood');
  if (flood) return writeFinishFlood(res, sse, flood.everyMs, () => closed);
  const { frames } = sse;
  const at = (f: { afterChunks?: number }) => f.afterChunks ?? 1;
  for (let i = 0; i <= frames.length; i++) {
    if (closed) return;
    for (const f of faults) {
      if (f.type === 'reset' && at(f) === i) {
        res.socket?.destroy();
        return;
      }
      if (f.type === 'truncate' && at(f) === i) {
        res.end();
        return;
      }
      if (f.type === 'garbage' && at(f) === i) res.write(`data: ${f.data ?? '{this is not json'}\n\n`);
      if (f.type === 'stall' && at(f) === i) await sleep(f.ms);
      if (f.type === 'thinking' && i === sse.opening)
        for (let k = 0; k < f.chunks && !closed; k++) {
          await sleep(f.everyMs);
          res.write(sse.thinking);
        }
    }
    if (i === frames.length) break;
    if (delayMs) await sleep(delayMs);
    res.write(frames[i]!);
  }
  if (!closed) res.end(sse.done);
}

/** The opening frames, then text (endless) or frames that say nothing (keep-alive), until the client hangs up. */
async function writeForever(
  res: ServerResponse,
  sse: SseFrames,
  fault: Extract<Fault, { type: 'endless' | 'keepalive' }>,
  closed: () => boolean,
): Promise<void> {
  // Yield to the event loop after every frame (the client runs in the same process in tests).
  const send = (frame: string): Promise<void> =>
    new Promise((resolve) => {
      if (res.write(frame)) setImmediate(resolve);
      else {
        res.once('drain', resolve);
        res.once('close', resolve);
      }
    });
  for (const frame of sse.frames.slice(0, sse.opening)) await send(frame);
  const text = fault.type === 'endless' ? (fault.text ?? 'all work and no play ') : '';
  while (!closed() && !res.destroyed) {
    if (fault.type === 'endless') await send(sse.text(text));
    else {
      if (fault.as === 'comment') res.write(': ping\n\n');
      else if (fault.as === 'delta') await send(sse.text(''));
      else if (sse.idle !== null) await send(sse.idle);
      await sleep(fault.everyMs);
    }
  }
}

/** The answer's frames through its finish, then the finish frame again and again (no usage, no end) until the client hangs up. */
async function writeFinishFlood(res: ServerResponse, sse: SseFrames, everyMs: number, closed: () => boolean): Promise<void> {
  for (const frame of sse.frames.slice(0, sse.finish.through)) res.write(frame);
  while (!closed() && !res.destroyed) {
    await sleep(everyMs);
    if (!closed()) res.write(sse.finish.frame);
  }
}

export async function writeCorrupted(res: ServerResponse, stream: string, seed: number): Promise<void> {
  const clean = Buffer.from(stream);
  const damaged = corruptStream(clean, seed);
  for (const piece of bytePieces(damaged.bytes, seed)) {
    if (res.destroyed) return;
    res.write(piece);
  }
  if (damaged.reset) {
    await new Promise<void>((resolve) => res.write('', () => resolve()));
    res.socket?.destroy();
  } else res.end();
}

/** `text` in pieces of `size` characters (whole code points). */
export function pieces(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
