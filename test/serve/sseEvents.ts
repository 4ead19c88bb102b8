/**
 * Reading the Responses and Messages APIs' answers in tests as a client does: POST a body,
 * and the SSE events (each `event:` name and its data, which carries the same `type`), or
 * the JSON.
 */
export interface SseEvent {
  event: string | null;
  data: Record<string, unknown> & { type?: string };
}

/** The events of an SSE body, in order; comments and `[DONE]` are skipped. */
export function sseEvents(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const frame of text.split('\n\n')) {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of frame.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (!data.length || data.join('\n') === '[DONE]') continue;
    out.push({ event, data: JSON.parse(data.join('\n')) as SseEvent['data'] });
  }
  return out;
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Record<string, unknown>; events: SseEvent[]; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const streamed = response.headers.get('content-type')?.startsWith('text/event-stream') ?? false;
  return {
    status: response.status,
    headers: response.headers,
    json: streamed || !text ? {} : (JSON.parse(text) as Record<string, unknown>),
    events: streamed ? sseEvents(text) : [],
    text,
  };
}

/** An Anthropic message's content as a client assembles it from the stream's events. */
export function assembledMessage(events: SseEvent[]): { content: Record<string, unknown>[]; stop_reason: unknown; usage: unknown } {
  const content: Record<string, unknown>[] = [];
  const json: string[] = [];
  let stop: unknown = null;
  let usage: unknown = null;
  for (const { data } of events) {
    const index = data.index as number;
    if (data.type === 'message_start') usage = (data.message as { usage: unknown }).usage;
    if (data.type === 'content_block_start') content[index] = { ...(data.content_block as Record<string, unknown>) };
    if (data.type === 'content_block_delta') {
      const delta = data.delta as Record<string, string>;
      const block = content[index]!;
      if (delta.type === 'text_delta') block.text = `${block.text as string}${delta.text}`;
      if (delta.type === 'thinking_delta') block.thinking = `${block.thinking as string}${delta.thinking}`;
      if (delta.type === 'signature_delta') block.signature = delta.signature;
      if (delta.type === 'input_json_delta') json[index] = (json[index] ?? '') + delta.partial_json;
    }
    if (data.type === 'content_block_stop' && json[index] !== undefined) content[index]!.input = JSON.parse(json[index]!) as unknown;
    if (data.type === 'message_delta') {
      stop = (data.delta as { stop_reason: unknown }).stop_reason;
      usage = { ...(usage as object), ...(data.usage as object) };
    }
  }
  return { content, stop_reason: stop, usage };
}
