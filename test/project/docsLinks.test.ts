/**
 * The documentation's shape, checked: the README fits in a sitting (≤ 300 lines) and links
 * every page of docs/, every relative link of the README and docs/ reaches a file (and a
 * heading, when it names one), every page ships in the package, and no page cites an issue
 * by number. The checker is tried first on a small page whose answers are known.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The repository's root: the nearest folder above this file that holds package.json. */
function rootOf(dir: string): string {
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('no package.json above the test');
    dir = up;
  }
  return dir;
}

const ROOT = rootOf(dirname(fileURLToPath(import.meta.url)));
const README_MAX_LINES = 300;
/** "issue 15", "issue #15", "#15": not a heading's anchor (`design.md#32-postgresql`) nor an HTML entity. */
const ISSUE_REFERENCE = /\bissues? #?\d+|(?<![\w&])#\d{2,}\b(?!-)/i;

/** The text outside fenced code blocks and inline code, where links and headings are. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Relative link targets (links and images), without their #anchor split off. */
function relativeLinks(markdown: string): { path: string; anchor: string | null }[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => {
      const hash = target.indexOf('#');
      return hash < 0 ? { path: target, anchor: null } : { path: target.slice(0, hash), anchor: target.slice(hash + 1) };
    });
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count ? `${base}-${count}` : base);
  }
  return anchors;
}

/**
 * Every relative link of `file` that reaches no file, or no heading of it. `page(path)` gives
 * a repository path's text ('' for a file that is not markdown), or null when there is none.
 */
function brokenLinks(file: string, markdown: string, page: (path: string) => string | null): string[] {
  const broken: string[] = [];
  for (const { path, anchor } of relativeLinks(markdown)) {
    const target = path ? posix.join(posix.dirname(file), decodeURIComponent(path)) : file;
    const body = page(target);
    const shown = `${path}${anchor === null ? '' : `#${anchor}`}`;
    if (body === null) broken.push(`${file}: ${shown} (no such file)`);
    else if (anchor && target.endsWith('.md') && !headingAnchors(body).has(anchor)) broken.push(`${file}: ${shown} (no such heading)`);
  }
  return broken;
}

function repositoryPage(path: string): string | null {
  const full = join(ROOT, path);
  if (path.startsWith('../') || !existsSync(full)) return null;
  return path.endsWith('.md') ? readFileSync(full, 'utf8') : '';
}

const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const PAGES = ['README.md', ...DOCS];
const text = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

describe('the checker, on a page whose answers are known', () => {
  const known = [
    '# Title',
    '## The `openaiChat` client: options',
    '## Title',
    'See [ok](docs/a.md), [anchored](docs/a.md#part-two), [here](#title-1), [gone](docs/missing.md),',
    '[no heading](docs/a.md#nowhere), ![picture](docs/a.md) and [web](https://example.com/x.md).',
    '`[not a link](docs/missing.md)`',
    '```ts',
    "const s = '[not a link](docs/missing.md)';",
    '```',
  ].join('\n');

  it('finds relative links outside code, with their anchors', () => {
    expect(relativeLinks(known)).toEqual([
      { path: 'docs/a.md', anchor: null },
      { path: 'docs/a.md', anchor: 'part-two' },
      { path: '', anchor: 'title-1' },
      { path: 'docs/missing.md', anchor: null },
      { path: 'docs/a.md', anchor: 'nowhere' },
      { path: 'docs/a.md', anchor: null },
    ]);
  });

  it("gives headings GitHub's anchors", () => {
    expect([...headingAnchors(known)]).toEqual(['title', 'the-openaichat-client-options', 'title-1']);
    expect(headingAnchors('### 7.5 Testing the machines\n## PostgreSQL: instances × sessions').has('75-testing-the-machines')).toBe(true);
  });

  it('reports a missing file and a missing heading, and nothing else', () => {
    const pages = new Map([
      ['docs/a.md', '# A\n## Part two\n'],
      ['docs/b.md', 'Back to [the README](../README.md#title), [a](a.md#part-two), [b](./b.md) and [out](../../x.md).'],
    ]);
    const page = (path: string): string | null => pages.get(path) ?? null;
    pages.set('README.md', known);
    expect(brokenLinks('README.md', known, page)).toEqual([
      'README.md: docs/missing.md (no such file)',
      'README.md: docs/a.md#nowhere (no such heading)',
    ]);
    expect(brokenLinks('docs/b.md', pages.get('docs/b.md')!, page)).toEqual(['docs/b.md: ../../x.md (no such file)']);
  });

  it('recognises issue references, and not anchors or headings', () => {
    expect(ISSUE_REFERENCE.test('fixed in issue 15')).toBe(true);
    expect(ISSUE_REFERENCE.test('Issue 19 §2')).toBe(true);
    expect(ISSUE_REFERENCE.test('see #42')).toBe(true);
    expect(ISSUE_REFERENCE.test('as issue #7 asks')).toBe(true);
    expect(ISSUE_REFERENCE.test('(fixed: #123)')).toBe(true);
    for (const fine of ['http://127.0.0.1:4900/#token=…', 'racer #3', '## Heading', '[§7.5](design.md#75-testing-the-machines)', '&#39;']) {
      expect(ISSUE_REFERENCE.test(fine), fine).toBe(false);
    }
  });
});

describe('the documentation', () => {
  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    expect(text('README.md').split('\n').length - 1).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('README.md links every page of docs/', () => {
    const linked = new Set(relativeLinks(text('README.md')).map((l) => l.path));
    expect(DOCS.length).toBeGreaterThan(0);
    expect(DOCS.filter((page) => !linked.has(page))).toEqual([]);
  });

  it('every relative link of the README and docs/ reaches a file, and the heading it names', () => {
    expect(PAGES.flatMap((file) => brokenLinks(file, text(file), repositoryPage))).toEqual([]);
  });

  it('every page of docs/ ships in the package, with the README', () => {
    const packed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(packed.status, packed.stderr).toBe(0);
    const files = new Set((JSON.parse(packed.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path));
    expect(PAGES.filter((page) => !files.has(page))).toEqual([]);
  });

  it('no page cites an issue by number', () => {
    const cited = PAGES.flatMap((file) =>
      text(file)
        .split('\n')
        .flatMap((line, i) => (ISSUE_REFERENCE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(cited).toEqual([]);
  });
});
