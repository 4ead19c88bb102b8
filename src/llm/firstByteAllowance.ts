/**
 * How long a request may wait for the first output of its answer. A model served on a CPU
 * (llama.cpp, Ollama on a laptop) reads the whole prompt before it sends anything: a 3B
 * model on two cores reads about 34 prompt tokens a second, so a cold 3.3k-token prompt
 * waits ~100 s. The wait allowed therefore follows the prompt's size — a base plus an
 * allowance per prompt token — apart from the stall allowed between chunks once output
 * flows. A timeout whose wait was mostly the prompt's is not retried: the same prompt would
 * wait as long again, and the error says what to change instead.
 */
import { BlockList, isIP } from 'node:net';
import { LLMError, type LLMRequest } from './llm.js';

/** A local server may be a CPU: 50 ms a prompt token is 20 tokens/s, below the 34 of a 3B model on two cores. */
export const LOCAL_MS_PER_PROMPT_TOKEN = 50;
/** A hosted model reads thousands of prompt tokens a second: the per-token share is a margin only. */
export const HOSTED_MS_PER_PROMPT_TOKEN = 1;
/** Node's timers hold at most 2^31 - 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface FirstByteOptions {
  /** Waited for the first output whatever the prompt's size. */
  baseMs: number;
  /** Waited in addition per token of the prompt. */
  msPerPromptToken: number;
}

export interface FirstByteAllowance extends FirstByteOptions {
  promptTokens: number;
  /** baseMs + promptTokens × msPerPromptToken. */
  ms: number;
}

export function firstByteAllowance(options: FirstByteOptions, request: LLMRequest): FirstByteAllowance {
  const promptTokens = request.promptTokens ?? estimatedPromptTokens(request);
  const ms = Math.min(MAX_TIMER_MS, Math.round(options.baseMs + promptTokens * options.msPerPromptToken));
  return { ...options, promptTokens, ms };
}

/** Without our count: about 4 bytes a token (within ~20 % on prose, code and Chinese). */
function estimatedPromptTokens(request: LLMRequest): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify([request.messages, request.tools])) / 4);
}

/** The error of a request that got no output within its allowance: what was waited, and why it is (not) retried. */
export function firstByteTimeout(allowance: FirstByteAllowance, cause?: unknown): LLMError {
  const { baseMs, msPerPromptToken, promptTokens, ms } = allowance;
  const share = promptTokens * msPerPromptToken;
  const waited = `no output from the server within ${duration(ms)}, the wait allowed before the first output for a prompt of ${promptTokens.toLocaleString('en-US')} tokens (${duration(baseMs)} + ${msPerPromptToken} ms a prompt token)`;
  const options = cause === undefined ? {} : { cause };
  if (share < baseMs) return new LLMError('timeout', waited, options);
  const rate = promptTokens / (ms / 1000);
  return new LLMError(
    'timeout',
    `${waited}. The wait was mostly the prompt's: a server that reads fewer than ${rate < 10 ? rate.toFixed(1) : Math.round(rate)} prompt tokens a second ` +
      'would not answer it in time on a retry either, so it was not retried. For a model on a CPU, raise firstByteMsPerPromptToken ' +
      '(or firstByteTimeoutMs), or send a shorter prompt (a smaller context window)',
    { ...options, shouldRetry: false },
  );
}

/** The per-token allowance a server at `baseURL` gets by default: a local one may be a CPU. */
export function msPerPromptTokenFor(baseURL: string): number {
  return isLocalURL(baseURL) ? LOCAL_MS_PER_PROMPT_TOKEN : HOSTED_MS_PER_PROMPT_TOKEN;
}

/** The AI SDK providers that are hosted services; any other (Ollama, an OpenAI-compatible server) may be local. */
const HOSTED_PROVIDERS =
  /^(openai|azure|anthropic|google|vertex|amazon-bedrock|bedrock|mistral|groq|xai|deepseek|cohere|fireworks|togetherai|perplexity|cerebras|deepinfra|gateway|openrouter)\b/i;

export function msPerPromptTokenForProvider(provider: string): number {
  return HOSTED_PROVIDERS.test(provider) ? HOSTED_MS_PER_PROMPT_TOKEN : LOCAL_MS_PER_PROMPT_TOKEN;
}

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['127.0.0.0', 8],
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['169.254.0.0', 16],
  ['100.64.0.0', 10],
  ['0.0.0.0', 8],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6');

/** A loopback or private address, or a name that only resolves nearby (localhost, *.local, a bare host name). */
export function isLocalURL(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  const family = isIP(host);
  if (family) return PRIVATE.check(host, family === 4 ? 'ipv4' : 'ipv6');
  return !host.includes('.') || /(^|\.)(localhost|local|internal|lan|home\.arpa)$/.test(host);
}

function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
  const minutes = Math.floor(s / 60);
  const rest = Math.round(s - minutes * 60);
  return rest ? `${minutes} min ${rest} s` : `${minutes} min`;
}
