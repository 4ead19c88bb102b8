/**
 * A family with a section of its own in docs/reliability.md (the Postgres matrix): its
 * table, figures and failures under one heading, which `--only <family>` replaces in the
 * document as it is, leaving the rest alone.
 */
import { table, type FamilyResult } from './report.js';

export function section(heading: string, intro: string[], result: FamilyResult): string {
  return [
    heading,
    '',
    ...intro,
    '',
    result.rows.length ? table(result.rows) : '(not run)',
    '',
    ...(result.figures ?? []).map((f) => `- ${f}`),
    ...(result.failures.length ? ['', 'Failures:', '', ...result.failures.map((f) => `- ${f.fault}: ${f.detail}`)] : []),
    '',
  ].join('\n');
}

/** `doc` with the section under `heading` (up to the next `## `) replaced by `text`, or `text` added at the end. */
export function spliceSection(doc: string, heading: string, text: string): string {
  const start = doc.indexOf(`\n${heading}\n`);
  if (start < 0) return `${doc.trimEnd()}\n\n${text}`;
  const next = doc.indexOf('\n## ', start + heading.length + 2);
  return `${doc.slice(0, start + 1)}${text}${next < 0 ? '' : `\n${doc.slice(next + 1)}`}`;
}
