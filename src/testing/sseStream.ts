/** The test server's answers on the wire: a reply as Chat Completions SSE chunks, written with the faults asked for. */
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

export async function writeStream(res: ServerResponse, chunks: unknown[], faults: Fault[], delayMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const corrupt = faults.find((f): f is Extract<Fault, { type: 'corrupt' }> => f.type === 'corrupt');
  if (corrupt) return writeCorrupted(res, chunks, corrupt.seed);
  let closed = false;
  res.on('close', () => (closed = true));
  const endless = faults.find(
    (f): f is Extract<Fault, { type: 'endless' | 'keepalive' }> => f.type === 'endless' || f.type === 'keepalive',
  );
  if (endless) return writeForever(res, chunks[0] as Record<string, unknown>, endless, () => closed);
  const flood = faults.find((f): f is Extract<Fault, { type: 'finish_flood' }> => f.type === 'finish_flood');
  if (flood) return writeFinishFlood(res, chunks, flood.everyMs, () => closed);
  const at = (f: { afterChunks?: number }) => f.afterChunks ?? 1;
  for (let i = 0; i <= chunks.length; i++) {
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
      if (f.type === 'thinking' && i === 1)
        for (let k = 0; k < f.chunks && !closed; k++) {
          await sleep(f.everyMs);
          const first = chunks[0] as { choices: Record<string, unknown>[] };
          res.write(
            `data: ${JSON.stringify({ ...first, choices: [{ ...first.choices[0], delta: { reasoning_content: 'thinking… ' } }] })}\n\n`,
          );
        }
    }
    if (i === chunks.length) break;
    if (delayMs) await sleep(delayMs);
    res.write(`data: ${JSON.stringify(chunks[i])}\n\n`);
  }
  if (!closed) res.end('data: [DONE]\n\n');
}

/** The first chunk, then content (endless) or empty keep-alive chunks, until the client hangs up. */
async function writeForever(
  res: ServerResponse,
  first: Record<string, unknown>,
  fault: Extract<Fault, { type: 'endless' | 'keepalive' }>,
  closed: () => boolean,
): Promise<void> {
  // Yield to the event loop after every chunk (the client runs in the same process in tests).
  const send = (chunk: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (res.write(`data: ${JSON.stringify(chunk)}\n\n`)) setImmediate(resolve);
      else {
        res.once('drain', resolve);
        res.once('close', resolve);
      }
    });
  await send(first);
  const choice = first.choices as { delta: unknown }[];
  const text = fault.type === 'endless' ? (fault.text ?? 'all work and no play ') : '';
  while (!closed() && !res.destroyed) {
    if (fault.type === 'endless') await send({ ...first, choices: [{ ...choice[0], delta: { content: text } }] });
    else {
      if (fault.as === 'comment') res.write(': ping\n\n');
      else await send(fault.as === 'delta' ? { ...first, choices: [{ ...choice[0], delta: { content: '' } }] } : { ...first, choices: [] });
      await sleep(fault.everyMs);
    }
  }
}

/** The answer's chunks through its finish, then the finish chunk again and again (no usage, no [DONE]) until the client hangs up. */
async function writeFinishFlood(res: ServerResponse, chunks: unknown[], everyMs: number, closed: () => boolean): Promise<void> {
  const answer = chunks.filter((c) => (c as { choices: unknown[] }).choices.length > 0);
  for (const chunk of answer) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  const finish = `data: ${JSON.stringify(answer.at(-1))}\n\n`;
  while (!closed() && !res.destroyed) {
    await sleep(everyMs);
    if (!closed()) res.write(finish);
  }
}

export async function writeCorrupted(res: ServerResponse, chunks: unknown[], seed: number): Promise<void> {
  const clean = Buffer.from(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`);
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

function pieces(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
