/**
 * scripted(responses): a policy that answers requests with fixed replies, in order.
 * A reply may be a string (text), a PolicyReply, or a function of the request.
 */
import type { ChatRequest, Policy, PolicyReply } from './wire.js';

export type ScriptedResponse = string | PolicyReply | ((request: ChatRequest) => PolicyReply | string);

export function scripted(responses: readonly ScriptedResponse[]): Policy {
  return (request, { index }) => {
    const step = responses[index];
    if (step === undefined) throw new Error(`scripted policy: no reply for request ${index + 1} (the script has ${responses.length})`);
    const reply = typeof step === 'function' ? step(request) : step;
    return typeof reply === 'string' ? { content: reply } : reply;
  };
}
