/**
 * The working memory's changes since the copy a request carries in its place (docs/design.md
 * §4.1): with memoryRefresh 'when-cheap' the memory block after the system prompt stays as
 * it was at the last cache boundary, so that a write does not make the provider read the
 * history after it again uncached, and the tail carries what changed since, as removed and
 * added lines under the heading they belong to (or the whole block, when that is shorter).
 * The copy plus its update is the memory as it stands now: what the model sees is the same
 * in content. applyMemoryUpdate reads it back (the test server's stand-in models do).
 */

/** The tag of the update block, in the tail after <context_meta>. */
export const MEMORY_UPDATE_BLOCK = 'working_memory_update';

const INTRO = {
  en: 'Changed since the copy above (- removed, + added):',
  zh: '上面的副本之后的改动（- 删去，+ 加上）：',
} as const;
const WHOLE = {
  en: 'Changed since the copy above; it now reads:',
  zh: '上面的副本之后有改动，现在是：',
} as const;

/** More lines than this on both sides and the whole block is sent instead of a diff (the diff costs their product). */
const MAX_DIFF_CELLS = 250_000;

/**
 * The update block that takes `before` (the memory block a request carries in its place) to
 * `after` (the memory block as it stands), or null when they are the same.
 */
export function renderMemoryUpdate(before: string, after: string, language: 'en' | 'zh', file: string): string | null {
  if (before === after) return null;
  const open = `<${MEMORY_UPDATE_BLOCK} file="${file}">`;
  const close = `</${MEMORY_UPDATE_BLOCK}>`;
  const whole = `${open}\n${WHOLE[language]}\n${after}\n${close}`;
  const hunks = lineDiff(before.split('\n'), after.split('\n'));
  if (!hunks) return whole;
  const diff = `${open}\n${INTRO[language]}\n${hunks}\n${close}`;
  return diff.length < whole.length ? diff : whole;
}

/**
 * The memory (overview.md's text, as inside <working_memory>) with the tail's update applied:
 * each change block found by the line before it (after its heading), its removed lines taken
 * out and its added ones put in their place; or the update's whole text. The detail index's
 * lines are not the overview's.
 */
export function applyMemoryUpdate(memory: string, tail: string): string {
  const start = tail.indexOf(`<${MEMORY_UPDATE_BLOCK}`);
  if (start < 0) return memory;
  const end = tail.indexOf(`</${MEMORY_UPDATE_BLOCK}>`, start);
  const body = tail.slice(tail.indexOf('\n', start) + 1, end < 0 ? undefined : end).replace(/\n$/, '');
  const lines = body.split('\n');
  const first = lines.shift() ?? '';
  if (first === WHOLE.en || first === WHOLE.zh) {
    return /<working_memory[^>]*>\n([\s\S]*?)\n<\/working_memory>/.exec(lines.join('\n'))?.[1] ?? memory;
  }
  const out = memory.split('\n');
  let inOverview = true;
  // Where the current section starts in `out`, and where the last change block ended.
  let from = 0;
  let at = 0;
  for (const line of lines) {
    if (line.startsWith('@@ ')) {
      const heading = line.slice(3);
      inOverview = heading === '' || !heading.startsWith('<') || heading.startsWith('<working_memory');
      // The overview's own tag opens the text; a markdown heading is one of its lines.
      const top = heading === '' || heading.startsWith('<working_memory');
      const found = top ? -1 : out.indexOf(heading);
      from = at = found + 1 || (top ? 0 : out.length);
      continue;
    }
    if (!inOverview) continue;
    const text = line.slice(1);
    if (line.startsWith(' ')) {
      const found = out.indexOf(text, from);
      at = found < 0 ? at : found + 1;
    } else if (line.startsWith('-')) {
      const found = out[at] === text ? at : out.indexOf(text, from);
      if (found >= 0) {
        out.splice(found, 1);
        at = found;
      }
    } else if (line.startsWith('+')) {
      out.splice(at++, 0, text);
    }
  }
  return out.join('\n');
}

/**
 * The lines that differ, in change blocks: a block opens with the nearest heading or tag line
 * above it (`@@ …`, when it is not the previous block's) and the unchanged line right before
 * it (` …`, when that is not the heading), then its removed (`-`) and added (`+`) lines.
 * Null when the blocks are too long to compare line by line.
 */
function lineDiff(a: string[], b: string[]): string | null {
  if (a.length * b.length > MAX_DIFF_CELLS) return null;
  // Longest common subsequence, by suffix lengths.
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: string[] = [];
  let heading: string | null = null;
  let shownHeading: string | null | undefined;
  let previous: string | null = null;
  let open = false;
  const change = (sign: '-' | '+', line: string): void => {
    if (!open) {
      if (shownHeading !== heading || shownHeading === undefined) {
        out.push(`@@ ${heading ?? ''}`);
        shownHeading = heading;
      }
      if (previous !== null && previous !== heading) out.push(` ${previous}`);
      open = true;
    }
    out.push(`${sign}${line}`);
  };
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      if (isHeading(a[i]!)) heading = a[i]!;
      previous = a[i]!;
      open = false;
      i++;
      j++;
    } else if (j >= m || (i < n && lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) change('-', a[i++]!);
    else change('+', b[j++]!);
  }
  return out.join('\n');
}

function isHeading(line: string): boolean {
  return /^#{1,6} /.test(line) || /^<[a-z_]+[ >]/.test(line);
}
