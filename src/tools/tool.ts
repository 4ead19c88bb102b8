/**
 * Tools the model can call: a name, a description, a zod schema for the arguments and
 * an `execute` function. The schema is both the validator and the JSON schema we send.
 */
import { z } from 'zod';

export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What a tool is told when it runs: the abort signal, the session, the turn and the request. */
export interface ToolContext {
  signal: AbortSignal;
  session: { id: string; dir: string; workingMemoryDir: string };
  /** The turn and the model request (within the turn) that made this call. */
  turn: number;
  request: number;
}

/** What a tool returns; a plain string is a successful result. */
export type ToolOutput = string | { content: string; isError?: boolean };

/**
 * What a built-in tool changed besides its result, returned with it: the turn acts on it
 * (a memory update resets the reminder, a compaction brings one). Host tools cannot claim
 * effects: the tool runner reads them from built-in tools only.
 */
export interface ToolEffects {
  /** A working-memory file was written (overview.md or another). */
  memoryWrite?: { path: string; bytes: number; isOverview: boolean; warning?: string };
  /** The history was compacted. */
  compacted?: boolean;
}

/** A built-in tool's output: the result and its effects. */
export type BuiltInToolOutput = ToolOutput | { content: string; isError?: boolean; effects: ToolEffects };

/** A tool the model can call, as defineTool makes it. */
export interface Tool<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly parameters: S;
  readonly spec: ToolSpec;
  execute(args: z.infer<S>, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A host tool: a name, a description, zod 4 parameters (validated before it runs) and what it does. */
export function defineTool<S extends z.ZodType>(definition: {
  name: string;
  description: string;
  parameters: S;
  execute: (args: z.infer<S>, context: ToolContext) => Promise<ToolOutput> | ToolOutput;
}): Tool<S> {
  const { name, description, parameters, execute } = definition;
  if (!TOOL_NAME.test(name)) {
    throw new TypeError(`defineTool: name ${JSON.stringify(name)} must match ${TOOL_NAME} (the Chat Completions rule)`);
  }
  if (!(parameters instanceof z.ZodType)) {
    // A zod 3 schema has `_def` but not zod 4's `_zod`: say which zod is needed.
    if (isZod3Schema(parameters))
      throw new TypeError(
        `defineTool(${name}): parameters is a zod 3 schema; workmem needs zod 4 (import { z } from 'zod' with zod ≥ 4, or 'zod/v4')`,
      );
    throw new TypeError(`defineTool(${name}): parameters must be a zod 4 schema, e.g. z.object({ … })`);
  }
  const schema = jsonSchemaOf(parameters);
  if (schema.type !== 'object') {
    throw new TypeError(`defineTool(${name}): parameters must be a z.object(...) schema, got type ${String(schema.type)}`);
  }
  return { name, description, parameters, execute, spec: { name, description, parameters: schema } };
}

function isZod3Schema(value: unknown): boolean {
  return typeof value === 'object' && value !== null && '_def' in value && !('_zod' in value);
}

/** One JSON schema per zod schema: tools built per session share their schemas' conversion. */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();
function jsonSchemaOf(parameters: z.ZodType): Record<string, unknown> {
  let schema = jsonSchemas.get(parameters);
  if (!schema) {
    // The input side: what the model sends. A parameter with a default may be left out, so it is
    // not required (the output side would list it, since parsing always fills it in).
    const { $schema: _ignored, ...rest } = z.toJSONSchema(parameters, {
      target: 'draft-07',
      io: 'input',
      // The input side leaves extra keys open; zod drops unknown keys, so tell the model not to send any.
      override: ({ zodSchema, jsonSchema }) => {
        const def = zodSchema._zod.def;
        if (def.type === 'object' && !('catchall' in def && def.catchall)) jsonSchema.additionalProperties = false;
      },
    }) as Record<string, unknown>;
    schema = rest;
    jsonSchemas.set(parameters, schema);
  }
  return schema;
}
