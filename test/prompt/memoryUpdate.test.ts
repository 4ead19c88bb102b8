/**
 * The memory's changes since the copy a request carries in its place (memoryRefresh
 * 'when-cheap'): removed and added lines under their heading, or the whole block when that
 * is shorter; read back, the copy and its update are the memory as it stands.
 */
import { describe, expect, it } from 'vitest';
import { applyMemoryUpdate, MEMORY_UPDATE_BLOCK, renderMemoryUpdate } from '../../src/prompt/memoryUpdate.js';
import { memoryBlock } from '../../src/prompt/promptBuilder.js';

const snapshot = (content: string, detail: { path: string; bytes: number; heading: string | null }[] = []) =>
  memoryBlock({ content, detail, version: 1, bytes: content.length } as never);
const inside = (block: string): string => /<working_memory[^>]*>\n([\s\S]*?)\n<\/working_memory>/.exec(block)![1]!;

const facts = (n: number) => Array.from({ length: n }, (_, i) => `- fact ${i}: value ${i}`).join('\n');
const before = `# Working Memory\n\n## Current task\nPlanning the trip\n\n## Known facts\n${facts(12)}\n\n## Open questions\n- none`;
const after = before.replace('Planning the trip', 'Booking the hotel').replace('- fact 3: value 3', '- fact 3: value 33') + '';
const withNew = after.replace('- fact 11: value 11', '- fact 11: value 11\n- budget: 3000 EUR');

describe('renderMemoryUpdate', () => {
  it('is null when nothing changed', () => {
    expect(renderMemoryUpdate(snapshot(before), snapshot(before), 'en', 'working-memory/overview.md')).toBeNull();
  });

  it('lists the lines removed and added under the heading they belong to', () => {
    const update = renderMemoryUpdate(snapshot(before), snapshot(withNew), 'en', 'working-memory/overview.md')!;
    expect(update.startsWith(`<${MEMORY_UPDATE_BLOCK} file="working-memory/overview.md">\n`)).toBe(true);
    expect(update.endsWith(`</${MEMORY_UPDATE_BLOCK}>`)).toBe(true);
    expect(update).toContain('@@ ## Current task\n-Planning the trip\n+Booking the hotel');
    // A block after the heading's first lines names the line before it.
    expect(update).toContain('@@ ## Known facts\n - fact 2: value 2\n-- fact 3: value 3\n+- fact 3: value 33');
    expect(update).toContain(' - fact 11: value 11\n+- budget: 3000 EUR');
    // Unchanged lines are not repeated.
    expect(update).not.toContain('fact 5: value 5');
    expect(update.length).toBeLessThan(snapshot(withNew).length);
  });

  it('sends the whole block when a diff would be longer (a rewrite from scratch)', () => {
    const old = before.replace(/value/g, 'old value');
    const update = renderMemoryUpdate(snapshot(old), snapshot(before), 'zh', 'working-memory/overview.md')!;
    expect(update).toContain(snapshot(before));
    expect(update).not.toContain('old value');
  });

  it('follows a change of the detail index too', () => {
    const update = withIndexEntry();
    expect(update).toContain('@@ <detail_index>\n-(no files yet)\n+- working-memory/detail/trip.md (2.0 KB): Trip');
  });
});

/** The update that adds one file to the detail index. */
function withIndexEntry(): string {
  return renderMemoryUpdate(
    snapshot(before),
    snapshot(before, [{ path: 'detail/trip.md', bytes: 2048, heading: 'Trip' }]),
    'en',
    'working-memory/overview.md',
  )!;
}

describe('applyMemoryUpdate', () => {
  it('gives the memory as it stands from the copy and the update, diff or whole', () => {
    for (const [from, to] of [
      [before, withNew],
      [before, after],
      ['a\nb\nc', 'x\ny\nz'],
    ] as const) {
      const update = renderMemoryUpdate(snapshot(from), snapshot(to), 'en', 'working-memory/overview.md')!;
      const tail = `\n\n<context_meta>\n{"tokens_used":1}\n</context_meta>\n\n${update}`;
      expect(applyMemoryUpdate(inside(snapshot(from)), tail)).toBe(to);
    }
  });

  it('leaves the memory as it is when the tail carries no update, and skips the index', () => {
    expect(applyMemoryUpdate(before, '\n\n<context_meta>\n{}\n</context_meta>')).toBe(before);
    const update = withIndexEntry();
    expect(applyMemoryUpdate(before, update)).toBe(before);
  });
});
