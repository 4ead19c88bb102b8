/** The Chat Completions door: chatWire.ts reads the request, clientAnswer.ts writes the answer, upstream.ts calls the model. */
import { readClientRequest, type ClientRequest } from './chatWire.js';
import { ClientStream, completionOf } from './clientAnswer.js';
import type { ClientWire, WireError } from './clientWire.js';
import type { Upstream } from './upstream.js';

export function chatDoor(upstream: Upstream | null): ClientWire<ClientRequest> {
  return {
    path: '/v1/chat/completions',
    name: 'the Chat Completions API',
    // upstream.ts sends no cache_control breakpoints: the provider's own prefix caching.
    loop: { provider: 'openai', caching: 'automatic' },
    read: (body) => readClientRequest(body),
    upstream,
    credential: (headers) => headers.authorization,
    stream: (res, headers, request) => new ClientStream(res, headers, request.streamUsage),
    json: (answer) => completionOf(answer),
    error: (_status, error) => openaiError(error),
    streamError: (error) => `data: ${JSON.stringify(openaiError(error))}\n\n`,
  };
}

/** An error in the OpenAI shape: the Chat Completions and the Responses API's. */
export function openaiError(error: WireError): { error: WireError } {
  return { error: { message: error.message, type: error.type, param: error.param, code: error.code } };
}
