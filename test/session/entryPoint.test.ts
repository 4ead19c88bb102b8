/**
 * The package entry: what a host imports from 'workmem', and the errors it gets when it
 * calls the API wrongly — naming what is missing or wrong, never a TypeError from inside.
 */
import { describe, expect, it } from 'vitest';
import { z as z3 } from 'zod/v3';
import { z } from 'zod';
import * as entry from '../../src/index.js';
import type { CompactionResult } from '../../src/index.js';
import { tempHome } from '../helpers.js';

describe('exports', () => {
  it('the entry point exports SessionInUseError, removeSession, findSession and the compaction result', async () => {
    expect(entry.SessionInUseError.prototype).toBeInstanceOf(Error);
    expect(typeof entry.removeSession).toBe('function');
    expect(typeof entry.findSession).toBe('function');
    // The types: tsc compiles this file (npm test builds first), so a missing export fails there.
    const result: Pick<CompactionResult, 'changed' | 'tokensBefore'> = { changed: 0, tokensBefore: 0 };
    expect(result.changed).toBe(0);
    await expect(entry.findSession('deadbeef', { home: tempHome() })).rejects.toThrow(/no session with id deadbeef/);
  });
});

describe('createSession and openSession check their options', () => {
  it('name the missing llm, or what is wrong with it', async () => {
    await expect(entry.createSession({} as never)).rejects.toThrow(
      'createSession: options.llm is missing: pass a model, e.g. openaiChat({ model }) or scriptedModel([...])',
    );
    await expect(entry.createSession(undefined as never)).rejects.toThrow('createSession: options must be an object, got undefined');
    await expect(entry.openSession('deadbeef', { llm: { model: 'm' } } as never)).rejects.toThrow(
      'openSession: options.llm.complete must be a function (an LLM: openaiChat({ model }) or scriptedModel([...]))',
    );
    const llm = entry.scriptedModel([]);
    await expect(entry.createSession({ llm, home: 42 } as never)).rejects.toThrow(
      'createSession: options.home must be a string, got number',
    );
    await expect(entry.createSession({ llm, tools: {} } as never)).rejects.toThrow(
      'createSession: options.tools must be an array of tools',
    );
  });
});

describe('defineTool', () => {
  it('names zod 4 when given a zod 3 schema', () => {
    const define = (parameters: unknown) =>
      entry.defineTool({ name: 'lookup', description: 'd', parameters: parameters as z.ZodType, execute: () => 'x' });
    expect(() => define(z3.object({ q: z3.string() }))).toThrow(
      "defineTool(lookup): parameters is a zod 3 schema; workmem needs zod 4 (import { z } from 'zod' with zod ≥ 4, or 'zod/v4')",
    );
    expect(() => define({ q: 'string' })).toThrow('defineTool(lookup): parameters must be a zod 4 schema');
    expect(define(z.object({ q: z.string() })).spec.parameters).toMatchObject({ type: 'object' });
  });
});
