/**
 * The exchange reads every upstream's answer as Chat Completions chunks (exchange.ts): an
 * upstream of another protocol makes one of each of its events that carries output.
 */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';

/** A chunk of the answer `head` names: a delta, the finish, the usage. */
export function upstreamChunk(
  head: { id: string; model: string; created: number },
  delta: Record<string, unknown>,
  finish: string | null = null,
  usage?: unknown,
): ChatCompletionChunk {
  return {
    ...head,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(usage ? { usage } : {}),
  } as ChatCompletionChunk;
}
