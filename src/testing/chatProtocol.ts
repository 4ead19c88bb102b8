/**
 * The test server's Chat Completions: the body is what the policy reads; the answer is one
 * chat.completion, or chat.completion.chunk events framed as OpenAI frames them (the role,
 * content and tool-call deltas, the finish, the usage chunk when asked for, [DONE]).
 */
import { randomBytes } from 'node:crypto';
import { sendError, sendJson } from '../http/jsonHttp.js';
import { checkRequest, unpairedTools } from './requestChecks.js';
import { logprobsOf, streamChunks, textPieces, wireToolCalls, writeStream } from './sseStream.js';
import type { ErrorKind, TestProtocol, TestUsage } from './testProtocol.js';
import { withTextContent, type ChatRequest } from './wire.js';

/** OpenAI's words and names for each error: the Chat Completions and the Responses API share them. */
export const OPENAI_ERRORS: Record<ErrorKind, { message: string; type: string; code: string | null }> = {
  auth: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
  invalid: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  too_large: { message: 'request body too large', type: 'invalid_request_error', code: null },
  not_found: { message: 'Not found.', type: 'invalid_request_error', code: null },
  rate_limit: { message: 'Rate limit reached for requests. Please try again later.', type: 'requests', code: 'rate_limit_exceeded' },
  server: { message: 'The server had an error while processing your request.', type: 'server_error', code: null },
  overflow: { message: 'The prompt is too long.', type: 'invalid_request_error', code: 'context_length_exceeded' },
};

/** An error as OpenAI answers one; `param` names the field of an overflow. */
export function sendOpenaiError(
  res: Parameters<typeof sendError>[0],
  status: number,
  kind: ErrorKind,
  message: string | undefined,
  param: string | null,
): void {
  const said = OPENAI_ERRORS[kind];
  sendError(res, status, message ?? said.message, said.type, said.code, param);
}

export const chatProtocol: TestProtocol = {
  name: 'chat',
  path: '/v1/chat/completions',
  authorized: (headers, apiKey) => headers.authorization === `Bearer ${apiKey}`,
  read(given, strict) {
    // Content given as parts (text parts, as agents send them) is read as its text, as a model reads it; parts
    // with cache_control marks stay as sent, for the prompt cache (the count and the stand-in models join them).
    const body = withTextContent(given as ChatRequest, { keepMarked: true });
    const problem = checkRequest(body) ?? (strict ? unpairedTools((body as ChatRequest).messages) : null);
    if (problem) return { problem };
    const b = body as ChatRequest;
    return {
      request: b,
      stream: b.stream === true,
      maxTokens: b.max_completion_tokens ?? b.max_tokens ?? 0,
      ...(typeof b.prompt_cache_key === 'string' ? { cacheKey: b.prompt_cache_key } : {}),
    };
  },
  error: (res, status, kind, message, param) =>
    sendOpenaiError(res, status, kind, message, param ?? (kind === 'overflow' ? 'messages' : null)),
  usage: (usage) => chatUsage(usage),
  overflow: (promptTokens, window) =>
    `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
  async answer(res, completion, read, _raw, faults, options) {
    const body = read.request;
    const usage = options.usage && chatUsage(options.usage);
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    if (!read.stream) {
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: completion.content,
              refusal: null,
              ...(completion.toolCalls.length ? { tool_calls: wireToolCalls(completion.toolCalls) } : {}),
            },
            logprobs: body.logprobs === true ? logprobsOf(textPieces(completion.content ?? '', options.chunkChars)) : null,
            finish_reason: completion.finishReason,
          },
        ],
        ...(usage ? { usage } : {}),
        system_fingerprint: 'fp_workmem',
      });
    }
    const includeUsage = body.stream_options?.include_usage === true && usage !== null;
    const frame = { id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: 'fp_workmem' };
    const chunks: Record<string, unknown>[] = streamChunks(completion, options.chunkChars, body.logprobs === true).map((choice) => ({
      ...frame,
      choices: [choice],
      ...(includeUsage ? { usage: null } : {}),
    }));
    if (includeUsage) chunks.push({ ...frame, choices: [], usage });
    await writeStream(res, chunks, faults, options.chunkDelayMs);
  },
};

/** OpenAI's usage; with `details`, as its newer models report it (half the completion counted as reasoning). */
function chatUsage(usage: TestUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...(usage.cachedTokens !== null || usage.details
      ? {
          prompt_tokens_details: {
            cached_tokens: usage.cachedTokens ?? 0,
            // Writes as OpenRouter reports them beside the reads; a provider that charges nothing for them reports none.
            ...(usage.writtenTokens ? { cache_write_tokens: usage.writtenTokens } : {}),
            ...(usage.details ? { audio_tokens: 0 } : {}),
          },
        }
      : {}),
    ...(usage.details
      ? {
          completion_tokens_details: {
            reasoning_tokens: Math.floor(usage.completionTokens / 2),
            audio_tokens: 0,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        }
      : {}),
  };
}
