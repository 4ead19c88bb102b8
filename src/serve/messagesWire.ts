/**
 * Anthropic's Messages API as the proxy reads a client's request (POST /v1/messages), as
 * Claude Code and the Anthropic SDK send it: `system` (a string or text blocks) and any
 * system message are the instructions; each user message's tool_result blocks are tool
 * messages, its text one user message after them; each assistant message's text and tool_use
 * blocks one assistant message, its thinking blocks kept beside its calls (callCompanions.ts).
 * Blocks the session cannot hold (images, documents, the provider's own tools' blocks) are
 * refused with 400 naming them, never dropped. `cache_control` marks are the client's layout,
 * which workmem's replaces: they are dropped and workmem places its own breakpoints (the TTL
 * the client asked for kept). A message `thread` is the session's to keep: one the client
 * creates is not asked of the upstream, one it continues is refused as not found (the
 * protocol's thread_not_found, on which Anthropic's SDK sends the whole conversation). The client's tools go upstream as it sent them, their marks
 * dropped; anthropic-version and anthropic-beta go upstream too.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ToolCall } from '../history/messages.js';
import type { ToolSpec } from '../tools/tool.js';
import { CallCompanions } from './callCompanions.js';
import { BadRequestError } from './chatWire.js';
import { passedOn, type DoorRequest } from './clientWire.js';
import { PlannedConversation, plannedShape, type PlannedMessage } from './plannedConversation.js';

export type Block = Record<string, unknown> & { type?: unknown };

export interface MessagesRequest extends DoorRequest {
  /** What passes upstream untouched (model, thinking, metadata, tool_choice, stop_sequences, temperature, …). */
  params: Record<string, unknown>;
  conversation: PlannedConversation;
  /** Its tools as it sent them (without their cache marks), by name. */
  wireTools: Map<string, Block>;
  /** Thinking blocks by the calls they came with: the client's, then this exchange's upstream answers'. */
  thinking: CallCompanions<Block>;
  /** The protocol's headers the client sent: anthropic-version, anthropic-beta. */
  headers: Record<string, string>;
  /** The TTL of the client's cache marks, when it asked for one ("1h"): workmem's breakpoints keep it. */
  cacheTtl: string | undefined;
  maxTokens: { value: number };
  /** How the last upstream answer stopped, in the protocol's words (stop_sequence and the sequence), for the client's answer. */
  stopped: { reason: string; sequence: string | null } | null;
}

/** Replaced by what workmem builds, or read here (a message thread is the session's to keep: never asked of the upstream). */
const OWN = new Set(['system', 'messages', 'tools', 'max_tokens', 'stream', 'thread']);
const PASSED_HEADERS = ['anthropic-version', 'anthropic-beta'];

export function readMessagesRequest(body: unknown, headers: IncomingHttpHeaders = {}): MessagesRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || !b.model) throw new BadRequestError('model is required', 'model');
  const limit = b.max_tokens;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)
    throw new BadRequestError('max_tokens is required: a positive whole number', 'max_tokens');
  if (!Array.isArray(b.messages) || !b.messages.length) throw new BadRequestError('messages must be a non-empty array', 'messages');
  // A thread the client asks to create is not kept upstream (the session keeps the conversation); one it continues is none the proxy holds.
  if ((b.thread as { type?: unknown } | null | undefined)?.type === 'continue')
    throw new BadRequestError(
      "thread: workmem serve keeps each conversation in its session, not in message threads kept upstream, so it holds no thread to continue; send the whole conversation (Anthropic's SDK does so itself on this error; its tool runner takes thread: false)",
      'thread',
      'thread_not_found',
    );
  let cacheTtl: string | undefined;
  const noteMark = (block: Block) => {
    const ttl = (block.cache_control as { ttl?: unknown } | undefined)?.ttl;
    if (typeof ttl === 'string') cacheTtl ??= ttl;
  };
  const system: string[] = [];
  if (typeof b.system === 'string') {
    if (b.system) system.push(b.system);
  } else if (Array.isArray(b.system))
    (b.system as Block[]).forEach((block, j) => {
      if (block?.type !== 'text' || typeof block.text !== 'string')
        throw new BadRequestError(`system[${j}] must be a text block`, 'system', 'unsupported_content');
      noteMark(block);
      if (block.text) system.push(block.text);
    });
  else if (b.system !== undefined && b.system !== null) throw new BadRequestError('system must be text or text blocks', 'system');
  const thinking = new CallCompanions<Block>();
  const plan: PlannedMessage[] = [];
  (b.messages as { role?: unknown; content?: unknown }[]).forEach((m, i) => {
    const where = `messages[${i}]`;
    const content = m?.content;
    if (typeof content !== 'string' && !Array.isArray(content))
      throw new BadRequestError(`${where}.content must be text or an array of blocks`, `${where}.content`);
    const blocks: Block[] = typeof content === 'string' ? [{ type: 'text', text: content }] : (content as Block[]);
    blocks.forEach((block) => block && typeof block === 'object' && block.cache_control && noteMark(block));
    switch (m.role) {
      case 'system': {
        const text = textOf(blocks, where);
        system.push(text);
        return;
      }
      case 'user': {
        const texts: Block[] = [];
        blocks.forEach((block, j) => {
          if (block?.type === 'tool_result') {
            if (typeof block.tool_use_id !== 'string' || !block.tool_use_id)
              throw new BadRequestError(`${where}.content[${j}].tool_use_id is required`, `${where}.content`);
            const id = block.tool_use_id;
            const result = block.content ?? '';
            const at = `${where}.content[${j}]`;
            const results = typeof result === 'string' ? result : checkedBlocks(result, at);
            plan.push({
              shape: plannedShape('tool', { toolCallId: id }),
              make: () => ({ role: 'tool', tool_call_id: id, content: typeof results === 'string' ? results : textOf(results, at) }),
            });
          } else if (block?.type === 'text') texts.push(block);
          else refuse(block, `${where}.content[${j}]`);
        });
        if (!texts.length) return;
        checkedBlocks(texts, where);
        plan.push({ shape: plannedShape('user'), make: () => ({ role: 'user', content: textOf(texts, where) }) });
        return;
      }
      case 'assistant': {
        const texts: Block[] = [];
        const calls: ToolCall[] = [];
        const thoughts: Block[] = [];
        blocks.forEach((block, j) => {
          if (block?.type === 'text') texts.push(block);
          else if (block?.type === 'tool_use') {
            if (typeof block.id !== 'string' || !block.id || typeof block.name !== 'string')
              throw new BadRequestError(`${where}.content[${j}] needs an id and a name`, `${where}.content`);
            calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
          } else if (block?.type === 'thinking' || block?.type === 'redacted_thinking') thoughts.push(block);
          else refuse(block, `${where}.content[${j}]`);
        });
        checkedBlocks(texts, where);
        thinking.keep(
          calls.map((c) => c.id),
          thoughts,
        );
        plan.push({
          shape: plannedShape('assistant', { calls: calls.map((c) => ({ id: c.id, name: c.function.name })) }),
          // One answer's text blocks hold one text, as the proxy streamed it.
          make: () => ({
            role: 'assistant',
            content: texts.map((t) => t.text).join('') || null,
            ...(calls.length ? { tool_calls: calls } : {}),
          }),
        });
        return;
      }
      default:
        throw new BadRequestError(`${where}.role ${JSON.stringify(m?.role)} is not one of user, assistant, system`, `${where}.role`);
    }
  });
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) if (!OWN.has(k)) params[k] = v;
  const passed: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string' && value) passed[name] = value;
  }
  return {
    params,
    body: passedOn(b),
    model: b.model,
    instructions: system.join('\n\n') || undefined,
    conversation: new PlannedConversation(plan),
    ...toolsOf(b.tools),
    thinking,
    headers: passed,
    cacheTtl,
    stream: b.stream === true,
    maxTokens: { value: limit },
    // metadata.user_id names a person (Claude Code's, a device and its session): never a conversation.
    user: null,
    stopped: null,
  };
}

function refuse(block: Block | undefined, where: string): never {
  throw new BadRequestError(
    `${where} is a ${JSON.stringify(block?.type)} block: workmem serve keeps text, tool calls and their results (the session's log holds text), so it refuses the request rather than drop the block`,
    where,
    'unsupported_content',
  );
}

/** Text blocks, checked: a block that is not text is refused. */
function checkedBlocks(blocks: unknown, where: string): Block[] {
  if (!Array.isArray(blocks)) throw new BadRequestError(`${where}.content must be text or an array of blocks`, `${where}.content`);
  (blocks as Block[]).forEach((block, j) => {
    if (block?.type !== 'text' || typeof block.text !== 'string') refuse(block, `${where}.content[${j}]`);
  });
  return blocks as Block[];
}

/** Checked text blocks' texts, joined. */
function textOf(blocks: readonly Block[], where: string): string {
  return checkedBlocks(blocks, where)
    .map((b) => b.text as string)
    .join('\n');
}

function toolsOf(raw: unknown): { tools: ToolSpec[]; wireTools: Map<string, Block> } {
  const wireTools = new Map<string, Block>();
  if (raw === undefined || raw === null) return { tools: [], wireTools };
  if (!Array.isArray(raw)) throw new BadRequestError('tools must be an array', 'tools');
  const tools = (raw as Block[]).map((tool, i): ToolSpec => {
    if (!tool || typeof tool !== 'object' || typeof tool.name !== 'string' || !tool.name)
      throw new BadRequestError(`tools[${i}] must be a tool with a name`, 'tools');
    const { cache_control: _mark, ...given } = tool;
    wireTools.set(tool.name, given);
    const schema = tool.input_schema;
    return {
      name: tool.name,
      description: typeof tool.description === 'string' ? tool.description : '',
      parameters: schema && typeof schema === 'object' ? (schema as Record<string, unknown>) : {},
    };
  });
  return { tools, wireTools };
}
