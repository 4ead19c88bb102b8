/**
 * Behaviour profiles: stand-ins for the habits real models show with working memory, so
 * that `workmem eval` is tested offline and users can rehearse a run before paying for
 * one. Each is a policy for the test server (or policyModel), built on protocolFollower:
 * - diligent: follows the protocol (protocolFollower as it is);
 * - lazy: never writes its memory, never compacts, ignores reminders, and its summaries
 *   keep the goal and the progress but none of the facts;
 * - forgetful: drops half the memory writes it means to make, reminded or not;
 * - eager: calls compact_history every few turns, whatever the window;
 * - sloppy: diligent, but one reply with tool calls in three is broken: malformed
 *   arguments, a tool name that does not exist, or the calls written as text;
 * - realistic: diligent's habits, but it forgets as models do in long contexts: a fact it
 *   would use from the request is recalled with a probability that falls with the tokens
 *   between the fact and the question and with the request's length, on a model's NoLiMa
 *   curve (recallCurves.ts; Llama 3.3 70B by default), each draw seeded.
 */
import { loadTokenCounter, type TokenCounter } from '../tokens/tokens.js';
import { protocolFollower, type Recall } from './protocolFollower.js';
import { DEFAULT_RECALL_CURVE, NOLIMA_CURVES, recallProbability, type RecallCurveName } from './recallCurves.js';
import type { Policy, PolicyReply } from './wire.js';

/** The names of the behaviour profiles, as `workmem eval --model testing:<profile>` takes them. */
export const BEHAVIOUR_PROFILES = ['diligent', 'lazy', 'forgetful', 'eager', 'sloppy', 'realistic'] as const;
/** One of the behaviour profiles' names. */
export type BehaviourProfile = (typeof BEHAVIOUR_PROFILES)[number];

/** A model that follows the working-memory protocol: protocolFollower. */
export function diligent(seed = 1): Policy {
  return protocolFollower({ seed });
}

/** A model that never maintains its memory: no writes, no compactions, summaries without the facts. */
export function lazy(seed = 1): Policy {
  return protocolFollower({ seed, dropsWrites: 1, compacts: false, summaries: 'no-facts' });
}

/** A model that drops half the memory writes it means to make, also when reminded. */
export function forgetful(seed = 1): Policy {
  return protocolFollower({ seed, dropsWrites: 0.5 });
}

/** A model that calls compact_history every few turns (one turn in four on average). */
export function eager(seed = 1): Policy {
  return protocolFollower({ seed, compactsEvery: 4 });
}

/** Unknown tool names it uses instead of the real ones, as models do. */
const WRONG_NAMES: Record<string, string> = { write: 'write_file', compact_history: 'compact', edit: 'edit_file', read: 'read_file' };

/**
 * A model that breaks its tool calls: of the replies with tool calls, one in three (by the
 * request, so the same request gets the same reply) has its first call's arguments cut
 * short, its name changed to one that does not exist, or all its calls written as text.
 */
export function sloppy(seed = 1): Policy {
  const follower = protocolFollower({ seed });
  return async (request, context) => {
    const reply = await follower(request, context);
    if (!reply.toolCalls?.length) return reply;
    const draw = fnv(`${seed}:${JSON.stringify(request.messages.at(-1))}:${request.messages.length}`) % 9;
    return draw < 3 ? broken(reply, draw) : reply;
  };
}

function broken(reply: PolicyReply, how: number): PolicyReply {
  const [first, ...rest] = reply.toolCalls!;
  if (how === 0)
    return { toolCalls: [{ ...first!, arguments: first!.arguments.slice(0, Math.floor(first!.arguments.length / 2)) }, ...rest] };
  if (how === 1) return { toolCalls: [{ ...first!, name: WRONG_NAMES[first!.name] ?? `${first!.name}_tool` }, ...rest] };
  const text = reply.toolCalls!.map((c) => `<tool_call>{"name": ${JSON.stringify(c.name)}, "arguments": ${c.arguments}}</tool_call>`);
  return { content: text.join('\n') };
}

/** A model that follows the protocol as diligent does, and forgets in long contexts on a NoLiMa curve. */
export function realistic(seed = 1, curve: RecallCurveName = DEFAULT_RECALL_CURVE): Policy {
  const points = NOLIMA_CURVES[curve];
  let follower: Promise<Policy> | null = null;
  const make = async (): Promise<Policy> => {
    const counter = await loadTokenCounter('gpt-4o');
    const recall: Recall = { probability: (after, total) => recallProbability(points, after, total), tokens: countsOnce(counter) };
    return protocolFollower({ seed, recall });
  };
  return async (request, context) => (await (follower ??= make()))(request, context);
}

/** A text's tokens, each text counted once (a request carries the same messages call after call). */
function countsOnce(counter: TokenCounter): (text: string) => number {
  const counted = new Map<string, number>();
  return (text) => {
    let n = counted.get(text);
    if (n === undefined) {
      if (counted.size >= 50_000) counted.clear();
      counted.set(text, (n = counter.text(text)));
    }
    return n;
  };
}

/** The policy of a profile by its name. */
export function behaviourProfile(name: BehaviourProfile, seed = 1): Policy {
  return { diligent, lazy, forgetful, eager, sloppy, realistic }[name](seed);
}

function fnv(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}
