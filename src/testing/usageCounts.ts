/**
 * The test server's own counts for a request's usage (gpt-tokenizer's, as a provider counts
 * with its own): the prompt, its content parts counted as their text, and the completion.
 */
import type { TokenCounter } from '../tokens/tokens.js';
import { plain } from './promptCache.js';
import type { Completion } from './sseStream.js';
import type { ChatRequest } from './wire.js';

export function promptTokensOf(counter: TokenCounter, body: ChatRequest): number {
  const tools = (body.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description ?? '',
    parameters: t.function.parameters ?? {},
  }));
  // Content sent in parts (with cache_control marks) counts as its text.
  return counter.request(body.messages.map(plain), tools);
}

export function countCompletion(counter: TokenCounter, completion: Completion): number {
  return (
    counter.text(completion.content ?? '') + completion.toolCalls.reduce((n, c) => n + counter.text(c.name) + counter.text(c.arguments), 0)
  );
}
