/**
 * The suite's outcome must not depend on the machine's load (issue 36: at load 8–12 on two
 * cores, cases that pass alone ran past their 30 s and failed). Checked on the sources: every
 * test and hook waits as long as the hang guard (test/hangGuard.ts), no test sets itself a
 * shorter bound, and no test asserts on elapsed wall-clock time. Speed belongs in test/bench/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.js';
import { HANG_MS } from '../hangGuard.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TEST = join(ROOT, 'test');

const testFiles = (): string[] =>
  readdirSync(TEST, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));

/** The places in `text` that match `pattern`, as file:line. */
function places(file: string, text: string, pattern: RegExp): string[] {
  return [...text.matchAll(pattern)].map((m) => `${relative(ROOT, file)}:${text.slice(0, m.index).split('\n').length}: ${m[0].trim()}`);
}

const ms = (literal: string): number => literal.split('*').reduce((n, part) => n * Number(part.trim().replaceAll('_', '')), 1);

describe("the suite's outcome does not depend on the machine's load", () => {
  it('every test and hook waits as long as the hang guard', () => {
    expect(HANG_MS).toBeGreaterThanOrEqual(10 * 60_000);
    expect(config.test?.testTimeout).toBe(HANG_MS);
    expect(config.test?.hookTimeout).toBe(HANG_MS);
  });

  it('no test or hook sets itself a shorter bound', () => {
    const shorter = testFiles().flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [
        ...places(file, text, /\{\s*timeout:\s*([\d_]+(?:\s*\*\s*[\d_]+)?)\s*\}/g),
        // it(name, fn, 30_000) and beforeAll(fn, 120_000): a number closing the call, on the
        // line of the brace or on its own (prettier's form, with a trailing comma)
        ...places(file, text, /\n\s*\},\s*([\d_]+(?:\s*\*\s*[\d_]+)?)\s*,?\s*\);/g),
      ].filter((place) => ms(/([\d_]+(?:\s*\*\s*[\d_]+)?)\s*\}?\s*,?\s*\)?;?$/.exec(place)![1]!) < HANG_MS);
    });
    expect(shorter).toEqual([]);
  });

  it('no test asserts on elapsed wall-clock time', () => {
    const timed = testFiles().flatMap((file) =>
      places(file, readFileSync(file, 'utf8'), /(?:Date\.now|performance\.now)\(\)\s*-\s*\w+\)\s*\.toBeLessThan/g),
    );
    expect(timed).toEqual([]);
  });
});
