/**
 * The JSON schema each tool advertises tells the model which parameters it must give:
 * required = what has no default and is not optional (issue 18).
 */
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import type { Session } from '../../src/session/session.js';
import { defineTool, type Tool } from '../../src/tools/tool.js';
import { newSession } from '../helpers.js';

/** Whether a parameter may be left out: it has a default or is optional (read off the zod schema itself). */
function mayBeOmitted(field: z.ZodType): boolean {
  return field.safeParse(undefined).success;
}

function shapeOf(tool: Tool): Record<string, z.ZodType> {
  return (tool.parameters as unknown as z.ZodObject).shape as Record<string, z.ZodType>;
}

const open: Session[] = [];
afterEach(async () => {
  for (const session of open.splice(0)) await session.close();
});

describe('tool schemas', () => {
  it('every built-in tool: a parameter with a default or optional is never required, one without always is', async () => {
    const session = await newSession({ llm: scriptedModel([]), itemMemory: {} });
    open.push(session);
    expect(session.tools.map((t) => t.name)).toEqual(['read', 'write', 'edit', 'compact_history', 'remember', 'recall', 'forget']);
    for (const tool of session.tools) {
      const shape = shapeOf(tool);
      const required = (tool.spec.parameters.required as string[] | undefined) ?? [];
      const expected = Object.keys(shape).filter((key) => !mayBeOmitted(shape[key]!));
      expect({ tool: tool.name, required: [...required].sort() }).toEqual({ tool: tool.name, required: expected.sort() });
      // Every parameter is still described, and the model is still told not to invent others.
      expect(Object.keys(tool.spec.parameters.properties as object).sort()).toEqual(Object.keys(shape).sort());
      expect(tool.spec.parameters.additionalProperties).toBe(false);
    }
  });

  it('the parameters the issue names are optional, and advertise their defaults', async () => {
    const session = await newSession({ llm: scriptedModel([]), itemMemory: {} });
    open.push(session);
    const spec = (name: string) =>
      session.tools.find((t) => t.name === name)!.spec.parameters as {
        required?: string[];
        properties: Record<string, { default?: unknown }>;
      };
    expect(spec('compact_history').required ?? []).toEqual([]);
    expect(spec('compact_history').properties.target!.default).toBe('all');
    expect(spec('compact_history').properties.strategy!.default).toBe('archive');
    expect(spec('compact_history').properties.keep_recent!.default).toBe(5);
    expect(spec('remember').required).toEqual(['content']);
    expect(spec('remember').properties.importance!.default).toBe(0.5);
    expect(spec('recall').required).toEqual(['query']);
    expect(spec('recall').properties.limit!.default).toBe(5);
  });

  it("a host tool's defaulted parameter is optional too, and the default still reaches execute", async () => {
    const tool = defineTool({
      name: 'lookup',
      description: 'Look something up.',
      parameters: z.object({ q: z.string(), max: z.number().default(3), lang: z.string().optional() }),
      execute: ({ q, max }) => `${q}:${max}`,
    });
    expect(tool.spec.parameters.required).toEqual(['q']);
    expect(tool.parameters.parse({ q: 'x' })).toEqual({ q: 'x', max: 3 });
  });
});
