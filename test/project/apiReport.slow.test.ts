/**
 * The public surface is deliberate: each entry's API report (api/*.api.md, from the built
 * declarations) must be the one checked in, and the main entry stays small and documented.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as main from '../../src/index.js';
import { apiReport, ENTRIES, ROOT } from './apiReport.js';

describe('API report', () => {
  it.each(Object.keys(ENTRIES))('%s: the report matches api/ (after a deliberate change: npm run api)', (entry) => {
    const outcome = apiReport(entry, false);
    expect(outcome.errors).toEqual([]);
    expect(outcome.changed, `the public surface of ${entry} changed: review it, then run npm run api and commit api/`).toBe(false);
  });

  it('the main entry exports at most 40 names, each with a TSDoc line', () => {
    const report = readFileSync(join(ROOT, 'api', 'workmem.api.md'), 'utf8');
    const exported = report.split('\n').filter((line) => /^export (declare )?(type|interface|class|function|const)\b/.test(line));
    expect(exported.length).toBeLessThanOrEqual(40);
    // The values the report lists are the ones the module really has.
    const values = exported.filter((line) => /^export (declare )?(class|function|const)\b/.test(line)).map((l) => l.split(/[ (<:]/)[2]);
    expect(values.sort()).toEqual(Object.keys(main).sort());
    const undocumented = report.split('\n').flatMap((line, i, lines) => (line === '// @public (undocumented)' ? [lines[i + 1]] : []));
    expect(undocumented).toEqual([]);
  });
});
