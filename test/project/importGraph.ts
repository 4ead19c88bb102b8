/**
 * A small import scanner for the architecture test: the imports of a TypeScript file as
 * the compiler sees them (typescript is already a devDependency), each marked type-only
 * or not, relative ones resolved to the .ts file they name. A type-only import is erased
 * from the built JavaScript, so it cannot make a module touch the disk or the network.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export interface ImportRef {
  /** As written: './x.js', 'node:fs', 'xstate'. */
  specifier: string;
  /** Erased when compiled: `import type`, `export type`, or every named binding marked `type`. */
  typeOnly: boolean;
  /** The .ts file a relative specifier names; null for a package or a built-in. */
  file: string | null;
}

export function importsOf(file: string): ImportRef[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const refs: ImportRef[] = [];
  const add = (specifier: string, typeOnly: boolean): void => {
    refs.push({ specifier, typeOnly, file: specifier.startsWith('.') ? resolveRelative(file, specifier) : null });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, importIsTypeOnly(node.importClause));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.exportClause;
      const allTypes =
        node.isTypeOnly ||
        (clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier.text, allTypes);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      add(node.moduleReference.expression.text, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) add(arg.text, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, true); // `typeof import('x')` in a type position
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return refs;
}

function importIsTypeOnly(clause: ts.ImportClause | undefined): boolean {
  if (!clause) return false; // `import './x.js'`: run for its effects
  if (clause.isTypeOnly) return true;
  if (clause.name) return false; // a default import is a value
  const bindings = clause.namedBindings;
  if (!bindings || ts.isNamespaceImport(bindings)) return false;
  // `import { type A, type B }` is erased; `import { type A, b }` (mixed) is a value import.
  return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

function resolveRelative(from: string, specifier: string): string | null {
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c)) ?? null;
}

/** `node:fs/promises` → `fs`, `@keyv/sqlite/x` → `@keyv/sqlite`, `ws` → `ws`. */
export function packageOf(specifier: string): string {
  const bare = specifier.replace(/^node:/, '');
  const parts = bare.split('/');
  return bare.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

export interface Violation {
  /** The root file, the files in between, and what was reached (a file or a package). */
  chain: string[];
}

/**
 * Follows the value imports of `roots` transitively and reports each forbidden package or
 * file it reaches, with the shortest chain of imports that leads there.
 */
export function forbiddenReach(
  roots: string[],
  forbidden: { packages: ReadonlySet<string>; files: (file: string) => boolean },
  show: (file: string) => string = (f) => f,
): Violation[] {
  const violations: Violation[] = [];
  for (const root of roots) {
    const parent = new Map<string, string | null>([[root, null]]);
    const chainTo = (file: string): string[] => {
      const chain: string[] = [];
      for (let at: string | null = file; at !== null; at = parent.get(at) ?? null) chain.unshift(show(at));
      return chain;
    };
    const queue = [root];
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const ref of importsOf(file)) {
        if (ref.typeOnly) continue;
        if (ref.file === null) {
          // A relative import the scanner cannot follow would hide whatever lies behind it.
          if (ref.specifier.startsWith('.')) violations.push({ chain: [...chainTo(file), `${ref.specifier} (not found)`] });
          else if (forbidden.packages.has(packageOf(ref.specifier))) violations.push({ chain: [...chainTo(file), ref.specifier] });
          continue;
        }
        if (parent.has(ref.file)) continue;
        parent.set(ref.file, file);
        if (forbidden.files(ref.file)) violations.push({ chain: chainTo(ref.file) });
        else queue.push(ref.file);
      }
    }
  }
  return violations;
}

/** The first import cycle among `files` (only imports between them count), or null. */
export function findCycle(files: string[], { typeImports }: { typeImports: boolean }): string[] | null {
  const inside = new Set(files);
  const edges = new Map(
    files.map((f) => [
      f,
      importsOf(f)
        .filter((r) => r.file !== null && inside.has(r.file) && (typeImports || !r.typeOnly))
        .map((r) => r.file!),
    ]),
  );
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): string[] | null => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of files) {
    if (state.has(file)) continue;
    const found = visit(file);
    if (found) return found;
  }
  return null;
}

/** The lines of the comments a file opens with, without their `/**`, `*` or `//` marks. */
export function topCommentLines(text: string): string[] {
  const ranges =
    ts.getLeadingCommentRanges(
      text.replace(/^#!.*\n/, (m) => ' '.repeat(m.length - 1) + '\n'),
      0,
    ) ?? [];
  return ranges.flatMap((r) =>
    text
      .slice(r.pos, r.end)
      .split('\n')
      .map((line) =>
        line
          .replace(/^\s*(\/\*\*?|\*\/|\*|\/\/)?\s?/, '')
          .replace(/\*\/\s*$/, '')
          .trimEnd(),
      ),
  );
}

export function relativeTo(root: string): (file: string) => string {
  return (file) => relative(root, file).split(sep).join('/');
}
