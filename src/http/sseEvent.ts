import type { ServerResponse } from 'node:http';

/** One named SSE event, as the Responses and the Messages API frame theirs: its `type` is the event's name. */
export function sseEvent(data: { type: string; [field: string]: unknown }): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The headers of an answer streamed as server-sent events. */
export function startSse(res: ServerResponse, headers: Record<string, string>): void {
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}
