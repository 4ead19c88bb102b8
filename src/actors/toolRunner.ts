/**
 * The toolRunner actor: runs the tool calls of one model response in order. Each call's
 * arguments are parsed and validated with the tool's zod schema; an unknown tool, bad
 * JSON, invalid arguments or a throwing tool give an error result the model can read,
 * never a crash. Each result is appended (and synced) before its message_end. On abort,
 * every call without a result gets one, so the history stays a valid message list.
 */
import { z } from 'zod';
import type { OverviewWrite, ToolResult, ToolRunnerInput, ToolRunnerOutput } from '../../machines/turnMachine.js';
import type { SessionEvent } from '../events.js';
import type { ToolCall } from '../history/messages.js';
import type { SessionRecord } from '../history/sessionRecord.js';
import type { TokenCounter } from '../tokens/tokens.js';
import type { Tool, ToolContext, ToolEffects } from '../tools/tool.js';
import { toTurnError } from '../../machines/turnErrors.js';
import { MEMORY_UPDATED, MEMORY_WRITTEN } from '../memory/heldWrites.js';
import { neutraliseTags } from '../prompt/structuralTags.js';
import { argumentProblem, omittedArguments } from '../tools/toolArguments.js';
import { invalidNameProblem } from '../llm/captureBounds.js';
import { boundErrorText, errorReason } from '../errors/errorText.js';

export interface ToolRunnerDeps {
  record: SessionRecord;
  /** The session's tools, by the names they were sent under. */
  tools: ToolLookup;
  counter: TokenCounter;
  emit(event: SessionEvent): void;
  now(): number;
  /** In a host's loop, record the results all the same (its host never sees workmem's calls). */
  recordHostResults?: boolean;
  /** Shapes what the model sees of a tool's output (caps large output); identity by default. */
  capture?(call: ToolCall, content: string, turn: number): Promise<string>;
}

/** Tools by the name they were sent under; workmem's own are those whose effects (a memory write, a compaction) the turn acts on. */
export interface ToolLookup {
  readonly all: readonly Tool[];
  named(name: string): Tool | undefined;
  isOwn(name: string): boolean;
}

export const ABORTED_RESULT = 'Aborted: the user stopped the turn before this tool call finished.';

export async function runToolCalls(input: ToolRunnerInput, signal: AbortSignal, deps: ToolRunnerDeps): Promise<ToolRunnerOutput> {
  const { record, counter } = deps;
  const answered = new Set<string>();
  let overviewWrite: OverviewWrite | null = null;
  let compacted = false;
  let finished = false;
  const results: ToolResult[] = [];

  // In a host's loop the host records the result (it sends it back with its next call), unless it never sees them.
  const hostRecords = input.hostLoop && !deps.recordHostResults;
  const append = async (call: ToolCall, content: string, isError: boolean, ms: number): Promise<void> => {
    const message = { role: 'tool' as const, tool_call_id: call.id, content };
    answered.add(call.id);
    results.push({ callId: call.id, content, isError });
    const base = { turn: input.turn, request: input.request };
    const entry = hostRecords ? null : await record.appendMessage(input.turn, message, counter.message(message), { sync: true });
    deps.emit({ type: 'tool_end', ...base, callId: call.id, name: call.function.name, isError, content, ms });
    if (entry) deps.emit({ type: 'message_end', ...base, seq: entry.seq, tokens: entry.tokens, message });
  };

  // On abort every call still without a result gets one, queued at once and in order (the
  // record appends them one after the other; saving the turn waits for them).
  const onAbort = (): void => {
    if (finished) return;
    finished = true;
    for (const call of input.calls)
      if (!answered.has(call.id))
        append(call, ABORTED_RESULT, true, 0).catch((error: unknown) =>
          deps.emit({ type: 'error', turn: input.turn, request: input.request, error: toTurnError(error, 'storage'), fatal: false }),
        );
  };
  signal.addEventListener('abort', onAbort, { once: true });

  try {
    for (const call of input.calls) {
      if (finished) break;
      deps.emit({
        type: 'tool_start',
        turn: input.turn,
        request: input.request,
        callId: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      });
      const started = deps.now();
      const { content, isError, effects } = await execute(call, deps, signal, record, input);
      if (finished) break; // aborted while the tool ran: its result was already recorded as aborted
      // What the model reads cannot close or forge the tags that frame the request.
      const shown = neutraliseTags(deps.capture ? await deps.capture(call, content, input.turn) : content);
      await append(call, shown, isError, deps.now() - started);
      if (effects?.compacted) compacted = true;
      const write = effects?.memoryWrite && !isError ? effects.memoryWrite : null;
      // Every write's size is logged: what the model holds counts against the session's quota after a resume too.
      if (write && !write.isOverview) await record.appendEvent(input.turn, MEMORY_WRITTEN, { path: write.path, bytes: write.bytes });
      const overview = write?.isOverview ? write : null;
      if (overview) {
        await record.appendEvent(input.turn, MEMORY_UPDATED, { path: overview.path, bytes: overview.bytes });
        overviewWrite = {
          at: deps.now(),
          path: overview.path,
          bytes: overview.bytes,
          ...(overview.warning ? { warning: overview.warning } : {}),
          memory: await record.memory.snapshot(),
        };
      }
    }
  } finally {
    finished = true;
    signal.removeEventListener('abort', onAbort);
  }
  return { history: record.history, overviewWrite, compacted, results };
}

async function execute(
  call: ToolCall,
  deps: ToolRunnerDeps,
  signal: AbortSignal,
  record: SessionRecord,
  input: ToolRunnerInput,
): Promise<{ content: string; isError: boolean; effects?: ToolEffects }> {
  const name = call.function.name;
  const badName = invalidNameProblem(call);
  const available = (): string => deps.tools.all.map((t) => t.name).join(', ');
  if (badName) return { content: `Error: ${badName}. Available tools: ${available()}.`, isError: true };
  const tool = deps.tools.named(name);
  if (!tool) {
    return {
      content: `Error: unknown tool ${JSON.stringify(name)}. Available tools: ${available()}.`,
      isError: true,
    };
  }
  const problem = argumentProblem(call.function.arguments);
  if (problem)
    return { content: `Error: ${name} was not run: ${problem}. Send one flat JSON object matching the tool's parameters.`, isError: true };
  let args: unknown;
  try {
    args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch (error) {
    return {
      content: `Error: the arguments of ${name} are not valid JSON (${errorReason(error)}). Send one JSON object matching the tool's parameters.`,
      isError: true,
    };
  }
  const omitted = omittedArguments(args);
  if (omitted) {
    return {
      content: `Error: ${name} was not run: ${omitted}. Send large content in parts: several smaller files, or edits of a few lines at a time.`,
      isError: true,
    };
  }
  const parsed = tool.parameters.safeParse(args);
  if (!parsed.success) {
    return { content: `Error: invalid arguments for ${name}:\n${z.prettifyError(parsed.error)}`, isError: true };
  }
  const context: ToolContext = {
    signal,
    session: { id: record.id, dir: record.dir, workingMemoryDir: record.memory.root },
    turn: input.turn,
    request: input.request,
  };
  try {
    const output = await tool.execute(parsed.data, context);
    if (typeof output === 'string') return { content: output, isError: false };
    if (output && typeof output.content === 'string') {
      const effects = deps.tools.isOwn(name) && 'effects' in output ? (output.effects as ToolEffects) : undefined;
      return { content: output.content, isError: output.isError === true, ...(effects ? { effects } : {}) };
    }
    return { content: `Error: tool ${name} returned ${describe(output)} instead of a string or { content }`, isError: true };
  } catch (error) {
    return { content: `Error: ${name} failed: ${boundErrorText(error instanceof Error ? error.message : String(error))}`, isError: true };
  }
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
