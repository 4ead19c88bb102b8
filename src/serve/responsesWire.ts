/**
 * The Responses API as the proxy reads a client's request (POST /v1/responses), stateless
 * as Codex and the Agents SDK use it by default: `instructions` and the system and developer
 * message items are the instructions; the other `input` items make workmem's conversation —
 * a user message item a user message; an answer's message items and its function (or custom)
 * tool calls one assistant message; each call's output a tool message; its reasoning items
 * kept beside its calls (callCompanions.ts). A namespaced call is named `namespace.name` in
 * the session (a function name has no dot). What the proxy cannot carry is refused with 400
 * naming it: `previous_response_id`, `conversation` and `item_reference` (state kept
 * upstream: the session holds the conversation), `background`, parts that are not text, and
 * item types the session cannot hold. The client's tools go upstream as it sent them.
 */
import type { ToolCall } from '../history/messages.js';
import type { ToolSpec } from '../tools/tool.js';
import { CallCompanions } from './callCompanions.js';
import { BadRequestError } from './chatWire.js';
import { passedOn, type DoorRequest } from './clientWire.js';
import { PlannedConversation, plannedShape, type PlannedMessage } from './plannedConversation.js';

export type WireItem = Record<string, unknown>;

export interface ResponsesRequest extends DoorRequest {
  /** What passes upstream untouched (model, reasoning, text, tool_choice, store, include, prompt_cache_key, …). */
  params: Record<string, unknown>;
  conversation: PlannedConversation;
  /** Its function and custom tools as it sent them, by name (a namespace's as `namespace.name`). */
  wireTools: Map<string, WireItem>;
  /** Its custom (free-form) tools' names: their calls and outputs have their own item types. */
  customTools: Set<string>;
  /** Its other tools (hosted ones, namespaces), sent upstream as given after the rest. */
  otherTools: WireItem[];
  /** Reasoning items by the calls they came with: the client's, then this exchange's upstream answers'. */
  reasoning: CallCompanions<WireItem>;
  /** The client's tools as it sent them, echoed in the answer. */
  clientTools: unknown[];
}

/** Replaced by what workmem builds, or read here. */
const OWN = new Set(['input', 'instructions', 'tools', 'stream', 'stream_options', 'max_output_tokens']);

/** Kept upstream by the provider: the proxy keeps the conversation in its session instead. */
const STATE = 'workmem serve keeps each conversation in its session, not in state kept upstream';

export function readResponsesRequest(body: unknown): ResponsesRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || !b.model) throw new BadRequestError('model is required', 'model');
  if (b.previous_response_id !== undefined && b.previous_response_id !== null)
    throw new BadRequestError(
      `previous_response_id is not served: ${STATE}; send the whole conversation in input (as Codex and the Agents SDK do by default)`,
      'previous_response_id',
      'unsupported_parameter',
    );
  if (b.conversation !== undefined && b.conversation !== null)
    throw new BadRequestError(
      `conversation is not served: ${STATE}; send the whole conversation in input`,
      'conversation',
      'unsupported_parameter',
    );
  if (b.background === true)
    throw new BadRequestError(
      'background is not served: workmem serve answers while the client waits',
      'background',
      'unsupported_parameter',
    );
  const items: WireItem[] =
    typeof b.input === 'string'
      ? [{ type: 'message', role: 'user', content: b.input }]
      : Array.isArray(b.input) && b.input.length
        ? (b.input as WireItem[])
        : (() => {
            throw new BadRequestError('input must be a string or a non-empty array of items', 'input');
          })();
  const tools = toolsOf(b.tools);
  const reasoning = new CallCompanions<WireItem>();
  const system: string[] = typeof b.instructions === 'string' && b.instructions ? [b.instructions] : [];
  const plan: PlannedMessage[] = [];
  let answer: Answer | null = null;
  const flush = () => {
    if (answer) plan.push(plannedAnswer(answer, reasoning));
    answer = null;
  };
  items.forEach((item, i) => {
    const where = `input[${i}]`;
    const type = typeof item?.type === 'string' ? item.type : item && typeof item === 'object' && 'role' in item ? 'message' : null;
    switch (type) {
      case 'message': {
        const text = checkedText(item.content, where);
        const role = item.role;
        if (role === 'system' || role === 'developer') {
          system.push(text);
        } else if (role === 'user') {
          flush();
          plan.push({ shape: plannedShape('user'), make: () => ({ role: 'user', content: checkedText(item.content, where) }) });
        } else if (role === 'assistant') (answer ??= newAnswer()).texts.push(item);
        else
          throw new BadRequestError(
            `${where}.role ${JSON.stringify(role)} is not one of system, developer, user, assistant`,
            `${where}.role`,
          );
        return;
      }
      case 'function_call':
      case 'custom_tool_call': {
        const args = type === 'function_call' ? item.arguments : item.input;
        if (typeof item.call_id !== 'string' || !item.call_id || typeof item.name !== 'string' || typeof args !== 'string')
          throw new BadRequestError(
            `${where} needs a call_id, a name and ${type === 'function_call' ? 'arguments' : 'input'} (a string)`,
            where,
          );
        (answer ??= newAnswer()).calls.push({
          id: item.call_id,
          type: 'function',
          function: { name: qualifiedName(item), arguments: args },
        });
        return;
      }
      case 'reasoning':
        (answer ??= newAnswer()).reasoning.push(item);
        return;
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (typeof item.call_id !== 'string' || !item.call_id)
          throw new BadRequestError(`${where}.call_id is required`, `${where}.call_id`);
        const output = item.output;
        checkedText(output, where, 'output');
        flush();
        const id = item.call_id;
        plan.push({
          shape: plannedShape('tool', { toolCallId: id }),
          make: () => ({ role: 'tool', tool_call_id: id, content: checkedText(output, where, 'output') }),
        });
        return;
      }
      case 'item_reference':
        throw new BadRequestError(`${where} is an item_reference: ${STATE}; send the item itself`, where, 'unsupported_parameter');
      default:
        throw new BadRequestError(
          `${where} is a ${JSON.stringify(type)} item: workmem serve carries messages, function and custom tool calls, their outputs and reasoning items, so it refuses the request rather than drop the item`,
          where,
          'unsupported_item',
        );
    }
  });
  flush();
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) if (!OWN.has(k)) params[k] = v;
  const limit = b.max_output_tokens;
  if (limit !== undefined && limit !== null && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1))
    throw new BadRequestError('max_output_tokens must be a positive whole number', 'max_output_tokens');
  return {
    params,
    body: passedOn(b),
    model: b.model,
    instructions: system.join('\n\n') || undefined,
    conversation: new PlannedConversation(plan),
    ...tools,
    reasoning,
    clientTools: Array.isArray(b.tools) ? b.tools : [],
    stream: b.stream === true,
    maxTokens: typeof limit === 'number' ? { value: limit } : null,
    user: typeof b.user === 'string' && b.user.trim() ? b.user : null,
  };
}

/** One answer's items as they come (its message items, its reasoning, its calls) until a user message or an output ends it. */
interface Answer {
  texts: WireItem[];
  reasoning: WireItem[];
  calls: ToolCall[];
}
const newAnswer = (): Answer => ({ texts: [], reasoning: [], calls: [] });

function plannedAnswer(answer: Answer, reasoning: CallCompanions<WireItem>): PlannedMessage {
  const { texts, calls } = answer;
  reasoning.keep(
    calls.map((c) => c.id),
    answer.reasoning,
  );
  return {
    shape: plannedShape('assistant', { calls: calls.map((c) => ({ id: c.id, name: c.function.name })) }),
    make: () => {
      // One answer's message items hold one text, as the proxy streamed it (the texts of every answer, in order).
      const content = texts.map((t) => checkedText(t.content, 'input', 'content')).join('');
      return { role: 'assistant', content: content || null, ...(calls.length ? { tool_calls: calls } : {}) };
    },
  };
}

/** A call's name in the session: a namespaced call as `namespace.name`. */
export function qualifiedName(item: WireItem): string {
  return typeof item.namespace === 'string' && item.namespace ? `${item.namespace}.${String(item.name)}` : String(item.name);
}

/** A content's text: a string, or its text parts joined; a part that is not text is refused, never dropped. */
function checkedText(content: unknown, where: string, field = 'content'): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new BadRequestError(`${where}.${field} must be text or an array of parts`, `${where}.${field}`);
  return content
    .map((part: { type?: unknown; text?: unknown; refusal?: unknown }, i) => {
      if ((part?.type === 'input_text' || part?.type === 'output_text') && typeof part.text === 'string') return part.text;
      if (part?.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
      throw new BadRequestError(
        `${where}.${field}[${i}] is a ${JSON.stringify(part?.type)} part: workmem serve keeps text only (the session's log holds text), so it refuses the request rather than drop the part`,
        `${where}.${field}`,
        'unsupported_content',
      );
    })
    .join('\n');
}

function toolsOf(raw: unknown): Pick<ResponsesRequest, 'tools' | 'wireTools' | 'customTools' | 'otherTools'> {
  const out = {
    tools: [] as ToolSpec[],
    wireTools: new Map<string, WireItem>(),
    customTools: new Set<string>(),
    otherTools: [] as WireItem[],
  };
  if (raw === undefined || raw === null) return out;
  if (!Array.isArray(raw)) throw new BadRequestError('tools must be an array', 'tools');
  (raw as WireItem[]).forEach((tool, i) => {
    if (!tool || typeof tool !== 'object') throw new BadRequestError(`tools[${i}] must be an object`, 'tools');
    if (tool.type === 'function' || tool.type === 'custom') {
      if (typeof tool.name !== 'string' || !tool.name) throw new BadRequestError(`tools[${i}] needs a name`, 'tools');
      out.wireTools.set(tool.name, tool);
      if (tool.type === 'custom') out.customTools.add(tool.name);
      out.tools.push({
        name: tool.name,
        description: typeof tool.description === 'string' ? tool.description : '',
        parameters:
          tool.type === 'function' && tool.parameters && typeof tool.parameters === 'object'
            ? (tool.parameters as Record<string, unknown>)
            : {},
      });
      return;
    }
    // A namespace goes upstream whole; its custom tools' calls are named namespace.name in the session.
    if (tool.type === 'namespace' && Array.isArray(tool.tools))
      for (const inner of tool.tools as WireItem[])
        if (inner?.type === 'custom') out.customTools.add(`${String(tool.name)}.${String(inner.name)}`);
    out.otherTools.push(tool);
  });
  return out;
}
