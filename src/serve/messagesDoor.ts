/** The Messages API door: messagesWire.ts reads the request, messagesAnswer.ts writes the answer, messagesUpstream.ts calls the model. */
import { sseEvent } from '../http/sseEvent.js';
import type { ClientWire } from './clientWire.js';
import { anthropicError, messageOf, MessagesStream } from './messagesAnswer.js';
import type { MessagesUpstream } from './messagesUpstream.js';
import { readMessagesRequest, type MessagesRequest } from './messagesWire.js';

export function messagesDoor(upstream: MessagesUpstream | null): ClientWire<MessagesRequest> {
  return {
    path: '/v1/messages',
    name: 'the Messages API',
    // messagesUpstream.ts marks cache_control breakpoints: Anthropic caches only up to them.
    loop: { provider: 'anthropic', caching: 'explicit' },
    read: (body, headers) => readMessagesRequest(body, headers),
    upstream,
    // Anthropic's clients send their key as x-api-key; with an auth token (ANTHROPIC_AUTH_TOKEN), as a Bearer.
    credential: (headers) => (typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : headers.authorization),
    stream: (res, headers, request) => new MessagesStream(res, headers, request),
    json: (answer, request) => messageOf(answer, request),
    error: (status, error) => anthropicError(status, error),
    streamError: (error) => sseEvent(anthropicError(500, error)),
  };
}
