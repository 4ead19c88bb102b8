/** The Responses API door: responsesWire.ts reads the request, responsesAnswer.ts writes the answer, responsesUpstream.ts calls the model. */
import { openaiError } from './chatDoor.js';
import type { ClientWire } from './clientWire.js';
import { sseEvent } from '../http/sseEvent.js';
import { responseOf, ResponsesStream } from './responsesAnswer.js';
import type { ResponsesUpstream } from './responsesUpstream.js';
import { readResponsesRequest, type ResponsesRequest } from './responsesWire.js';

export function responsesDoor(upstream: ResponsesUpstream | null): ClientWire<ResponsesRequest> {
  return {
    path: '/v1/responses',
    name: 'the Responses API',
    // responsesUpstream.ts sends no cache breakpoints: the provider's own prefix caching.
    loop: { provider: 'openai', caching: 'automatic' },
    read: (body) => readResponsesRequest(body),
    upstream,
    credential: (headers) => headers.authorization,
    stream: (res, headers, request) => new ResponsesStream(res, headers, request),
    json: (answer, request) => responseOf(answer, request),
    error: (_status, error) => openaiError(error),
    streamError: (error) => sseEvent({ type: 'error', code: error.code ?? error.type, message: error.message, param: error.param }),
  };
}
