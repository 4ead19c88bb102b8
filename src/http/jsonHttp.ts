/**
 * Reading a request body and answering in JSON over node:http, as the proxy (workmem serve)
 * and the test server both speak the Chat Completions wire: a body past its limit is not
 * buffered, and errors have the OpenAI shape ({ error: { message, type, param, code } }).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';

/**
 * The body as text, or null once it passes `limit` bytes: what came is dropped and the
 * request paused (or what `tooLarge` does with it), so the caller answers 413 and closes.
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  tooLarge: (req: IncomingMessage) => void = (r) => void r.pause(),
): Promise<string | null> {
  return (await readBodyPieces(req, limit, tooLarge))?.join('') ?? null;
}

/**
 * The body as text in the pieces it came in (parseJsonInSlices takes them so): one string
 * of megabytes costs the loop ~8 ms to make. Null as for readBody.
 */
export function readBodyPieces(
  req: IncomingMessage,
  limit: number,
  tooLarge: (req: IncomingMessage) => void = (r) => void r.pause(),
): Promise<string[] | null> {
  return new Promise((resolve, reject) => {
    // Decoded as it comes, a character split between two chunks put together by the decoder.
    const decoder = new StringDecoder('utf8');
    const parts: string[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        resolve(null);
        tooLarge(req);
        return;
      }
      parts.push(decoder.write(chunk));
    });
    req.on('end', () => resolve([...parts, decoder.end()]));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** An error in the OpenAI shape. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): void {
  sendJson(res, status, { error: { message, type, param, code } });
}
