/**
 * The options of createSession / openSession checked before use, so that a host's
 * mistake is named (`options.llm is missing`) instead of surfacing as a TypeError from
 * deep inside. Only the shape is checked here; values are checked where they are used.
 */
import { ConfigError } from '../settings/config.js';
import { promptProblem } from '../llm/captureBounds.js';
import { SESSION_ID } from '../storage/sessionPaths.js';

const AN_LLM = 'openaiChat({ model }) or scriptedModel([...])';

export function checkSessionOptions(options: unknown, caller: 'createSession' | 'openSession'): void {
  const fail = (message: string): never => {
    throw new ConfigError(`${caller}: ${message}`);
  };
  if (typeof options !== 'object' || options === null) fail(`options must be an object, got ${options === null ? 'null' : typeof options}`);
  const o = options as Record<string, unknown>;
  const llm = o.llm as Record<string, unknown> | undefined | null;
  if (llm === undefined || llm === null) fail(`options.llm is missing: pass a model, e.g. ${AN_LLM}`);
  if (typeof llm !== 'object') fail(`options.llm must be an LLM (${AN_LLM}), got ${typeof llm}`);
  if (typeof llm!.model !== 'string' || !llm!.model) fail(`options.llm.model must be a model name (an LLM: ${AN_LLM})`);
  if (typeof llm!.complete !== 'function') fail(`options.llm.complete must be a function (an LLM: ${AN_LLM})`);
  if (o.id !== undefined && (typeof o.id !== 'string' || !SESSION_ID.test(o.id)))
    fail(
      `options.id must be a session id (a lowercase UUID), got ${typeof o.id === 'string' ? JSON.stringify(o.id.slice(0, 80)) : typeOf(o.id)}`,
    );
  for (const key of ['home', 'cwd', 'name', 'instructions'] as const)
    if (o[key] !== undefined && typeof o[key] !== 'string') fail(`options.${key} must be a string, got ${typeOf(o[key])}`);
  if (o.tools !== undefined && !Array.isArray(o.tools)) fail('options.tools must be an array of tools (defineTool(...))');
  for (const key of ['settings', 'env', 'itemMemory'] as const)
    if (o[key] !== undefined && (typeof o[key] !== 'object' || o[key] === null))
      fail(`options.${key} must be an object, got ${typeOf(o[key])}`);
  const store = o.stateStore as Record<string, unknown> | undefined;
  if (
    store !== undefined &&
    (typeof store !== 'object' || store === null || typeof store.get !== 'function' || typeof store.set !== 'function')
  )
    fail(`options.stateStore must be a keyv instance (new Keyv({ store: ... })), got ${typeOf(store)}`);
  const sessions = o.store as Record<string, unknown> | undefined;
  if (
    sessions !== undefined &&
    (typeof sessions !== 'object' || sessions === null || typeof sessions.open !== 'function' || typeof sessions.create !== 'function')
  )
    fail(`options.store must be a session store (fileSessionStore(...), postgresStore(...)), got ${typeOf(sessions)}`);
  for (const key of ['now', 'inspect', 'warn'] as const)
    if (o[key] !== undefined && typeof o[key] !== 'function') fail(`options.${key} must be a function, got ${typeOf(o[key])}`);
  if (o.pinned !== undefined) {
    if (!Array.isArray(o.pinned)) fail(`options.pinned must be an array of message texts, got ${typeOf(o.pinned)}`);
    (o.pinned as unknown[]).forEach((text, i) => {
      if (typeof text !== 'string' || text.trim() === '')
        fail(`options.pinned[${i}] must be a non-empty string, got ${typeof text === 'string' ? 'an empty one' : typeOf(text)}`);
      const tooLarge = promptProblem(text as string);
      if (tooLarge) fail(`options.pinned[${i}]: ${tooLarge}`);
    });
  }
}

/** A prompt's options, checked: whether it is pinned. */
export function pinOption(options: unknown): boolean {
  if (typeof options !== 'object' || options === null) throw new TypeError(`prompt options must be an object, got ${typeOf(options)}`);
  const pin = (options as { pin?: unknown }).pin;
  if (pin !== undefined && typeof pin !== 'boolean') throw new TypeError(`prompt options.pin must be true or false, got ${typeOf(pin)}`);
  return pin === true;
}

function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
