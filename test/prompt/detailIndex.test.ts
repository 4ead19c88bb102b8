/**
 * The detail index in the memory block: every file named while there are few; past
 * INDEX_ENTRIES (12) the earliest are summed up in one line that says how many, how large
 * and from which file to which, while the newest archives, the files after them and the
 * tool outputs' folder stay named. An agent that compacts every few turns gathers an archive
 * each time, and the index is sent with every request.
 */
import { describe, expect, it } from 'vitest';
import { memoryBlock } from '../../src/prompt/promptBuilder.js';
import type { DetailEntry, MemorySnapshot } from '../../src/memory/memoryRules.js';
import { memoryHealth } from '../../src/memory/memoryTemplate.js';

function snapshot(detail: DetailEntry[]): MemorySnapshot {
  const content = '# Working Memory\n\n## Current task\nPlan the garden.\n';
  return { version: 1, content, bytes: content.length, health: memoryHealth(content), detail };
}

const archive = (i: number): DetailEntry => ({
  path: `detail/compact-2026-01-05T09-${String(i).padStart(2, '0')}-00-000Z.md`,
  bytes: 2048,
  heading: `Archived conversation, turns 1-${i * 4}`,
});
const index = (block: string): string[] =>
  block.slice(block.indexOf('<detail_index>\n') + 15, block.indexOf('\n</detail_index>')).split('\n');

describe('the detail index', () => {
  it('names every file while there are at most 12', () => {
    const lines = index(memoryBlock(snapshot(Array.from({ length: 12 }, (_, i) => archive(i + 1)))));
    expect(lines).toHaveLength(12);
    expect(lines[0]).toBe('- working-memory/detail/compact-2026-01-05T09-01-00-000Z.md (2.0 KB): Archived conversation, turns 1-4');
  });

  it('past 12, sums up the earliest in one line and names the newest, the files after them and the folder', () => {
    const detail = [
      ...Array.from({ length: 30 }, (_, i) => archive(i + 1)),
      { path: 'detail/notes.md', bytes: 512, heading: 'My notes' },
      { path: 'detail/tool-outputs/', bytes: 0, heading: null },
    ];
    const lines = index(memoryBlock(snapshot(detail)));
    expect(lines).toHaveLength(1 + 1 + 12);
    expect(lines[0]).toBe(
      '- … 19 earlier files (38.0 KB), from working-memory/detail/compact-2026-01-05T09-01-00-000Z.md to working-memory/detail/compact-2026-01-05T09-19-00-000Z.md',
    );
    expect(lines[1]).toMatch(/^- working-memory\/detail\/tool-outputs\/: full outputs/);
    expect(lines[2]).toMatch(/compact-2026-01-05T09-20-00-000Z\.md/);
    expect(lines.at(-2)).toMatch(/compact-2026-01-05T09-30-00-000Z\.md/);
    expect(lines.at(-1)).toBe('- working-memory/detail/notes.md (512 B): My notes');
  });
});
