/**
 * The package as a new user gets it: the README's lines for a clone, as typed (`npm pack` in
 * the clone, `npm install <the tarball>` in an empty project), the install with scripts off (as pnpm 10 and Bun do by default, and `--ignore-scripts`),
 * then use it from there — import `workmem` and `workmem/testing`, run a prompt against the
 * local test server, `workmem --help`, `rpc --help`'s documentation path, `workmem demo`,
 * and `workmem viz` with its page, script and stylesheet. Nothing native may be installed.
 * Needs the npm registry (or a warm npm cache).
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANG_MS } from '../hangGuard.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

let work = '';
let project = '';
let tarball = '';
let files: string[] = [];
const env = (): NodeJS.ProcessEnv => {
  const clean: NodeJS.ProcessEnv = { ...process.env, WORKMEM_HOME: join(work, 'home') };
  for (const key of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'WORKMEM_MODEL']) delete clean[key];
  return clean;
};

function run(command: string, args: string[], cwd: string, timeout = HANG_MS, extra: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, env: { ...env(), ...extra }, encoding: 'utf8', timeout });
  if (result.error) throw result.error;
  return result;
}

/** A child run to its end without blocking this process (its status, output and errors). */
function runAsync(
  command: string,
  args: string[],
  cwd: string,
  childEnv: NodeJS.ProcessEnv,
  timeout = HANG_MS,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

function ok(result: SpawnSyncReturns<string>, what: string): string {
  if (result.status !== 0) throw new Error(`${what} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/**
 * The README's lines that install workmem into a project from a clone, as a user types them
 * (`cd <dir> && <npm command>`), with its placeholder paths: each line's folder and command.
 */
function readmeInstallLines(): { dir: string; command: string[] }[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /until\s+then, from your clone:\n\n```sh\n([\s\S]*?)```/i.exec(readme)?.[1];
  if (!block) throw new Error("README.md has no install lines for a clone (a ```sh block after 'Until then, from your clone:')");
  return block
    .trim()
    .split('\n')
    .map((line) => {
      const parsed = /^cd (\S+) && (npm .*?)\s*(?:#.*)?$/.exec(line);
      if (!parsed) throw new Error(`README.md install line not of the form cd <dir> && npm …: ${line}`);
      return { dir: parsed[1]!, command: parsed[2]!.split(/\s+/) };
    });
}

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'bin.js'))) throw new Error('dist/ is missing: npm test builds it (pretest)');
  work = mkdtempSync(join(tmpdir(), 'workmem-pack-'));
  project = join(work, 'project');
  mkdirSync(project);
  // What `npm init -y` and `npm pkg set type=module` write, without two more npm processes.
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'project', version: '1.0.0', private: true, type: 'module' }));
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  tarball = join(work, `workmem-${version}.tgz`);
  // The README's lines as typed, with its placeholders for this clone and this project. The tarball is made
  // in the test's folder, not the clone's (npm's pack-destination); the install runs with install scripts off.
  const place = (text: string): string =>
    text
      .replace(`/path/to/workmem/workmem-${version}.tgz`, tarball)
      .replace('/path/to/workmem', ROOT)
      .replace('/path/to/your-project', project);
  const lines = readmeInstallLines();
  expect(lines.map((l) => `${l.dir}: ${l.command.join(' ')}`)).toEqual([
    '/path/to/workmem: npm pack',
    `/path/to/your-project: npm install /path/to/workmem/workmem-${version}.tgz`,
  ]);
  const [pack, install] = lines.map((l) => ({ dir: place(l.dir), command: l.command.map(place) }));
  const packed = ok(
    run(pack!.command[0]!, [...pack!.command.slice(1), '--json'], pack!.dir, HANG_MS, { npm_config_pack_destination: work }),
    'npm pack',
  );
  files = (JSON.parse(packed.slice(packed.indexOf('['))) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  ok(
    run(install!.command[0]!, install!.command.slice(1), install!.dir, HANG_MS, {
      npm_config_ignore_scripts: 'true',
      npm_config_prefer_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
    }),
    'npm install',
  );
  expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies).toEqual({
    workmem: `file:../workmem-${version}.tgz`,
  });
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed package, installed in an empty project', () => {
  it('ships the visualizer, LICENSE, docs/rpc.md and the links; no source maps, tests or examples', () => {
    for (const f of ['LICENSE', 'README.md', 'docs/rpc.md', 'visualizer/index.html', 'visualizer/app.js', 'visualizer/style.css']) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    const installed = join(project, 'node_modules', 'workmem');
    const pointing = files.filter((f) => f.endsWith('.js') && readFileSync(join(installed, f), 'utf8').includes('sourceMappingURL'));
    expect(pointing, 'shipped files that name a source map').toEqual([]);
    expect(files.filter((f) => /^dist\/(test|examples)\//.test(f) || /\.test\./.test(f))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules', 'workmem', 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.repository).toEqual({ type: 'git', url: 'git+https://github.com/workmem/workmem.git' });
    expect(manifest.homepage).toBe('https://github.com/workmem/workmem#readme');
    expect(manifest.bugs).toEqual({ url: 'https://github.com/workmem/workmem/issues' });
    expect(readFileSync(join(project, 'node_modules', 'workmem', 'LICENSE'), 'utf8')).toMatch(
      /^MIT License\n\nCopyright \(c\) 2026 the workmem authors\n/,
    );
  });

  it('installs no native addon: no .node file, no binding.gyp, no sqlite in the production tree', () => {
    const natives: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.node') || entry.name === 'binding.gyp') natives.push(path.slice(project.length + 1));
      }
    };
    walk(join(project, 'node_modules'));
    expect(natives).toEqual([]);
    const tree = ok(run('npm', ['ls', '--omit=dev', '--all', '--parseable'], project), 'npm ls');
    expect(tree).toContain('workmem');
    expect(tree).not.toMatch(/sqlite/);
  });

  it('imports workmem and workmem/testing and runs a prompt against the local test server', () => {
    writeFileSync(
      join(project, 'smoke.mjs'),
      [
        "import { createSession, openaiChat } from 'workmem';",
        "import { startTestServer, protocolFollower } from 'workmem/testing';",
        // The AI SDK and LangChain are optional peers: not installed here, and no entry but their own needs them to load.
        "import { aiSdkModel } from 'workmem/ai-sdk';",
        "import { sessionMachine } from 'workmem/machines';",
        "if (typeof aiSdkModel !== 'function') throw new Error('workmem/ai-sdk exports no aiSdkModel');",
        "if (typeof sessionMachine !== 'object') throw new Error('workmem/machines exports no sessionMachine');",
        "for (const peer of ['ai', 'langchain', '@langchain/core'])",
        '  await import(peer).then(() => { throw new Error(`${peer} is installed: this smoke test must run without it`); }, () => {});',
        // workmem/langchain itself says which package it misses.
        "await import('workmem/langchain').then(() => { throw new Error('workmem/langchain loaded without langchain'); }, (e) => { if (!/langchain/.test(e.message)) throw e; });",
        'const server = await startTestServer({ policy: protocolFollower({ seed: 1 }) });',
        "const llm = openaiChat({ baseURL: server.baseURL, apiKey: 'test', model: 'workmem-test' });",
        "const session = await createSession({ llm, home: process.env.WORKMEM_HOME, cwd: '/pack-test' });",
        "const result = await session.prompt('My name is Ada. Remember it.');",
        'await session.close();',
        'await server.close();',
        'console.log(JSON.stringify({ status: result.status, text: result.text, requests: server.requests.length }));',
      ].join('\n'),
    );
    const out = ok(run(process.execPath, ['smoke.mjs'], project), 'smoke.mjs');
    const result = JSON.parse(out.trim().split('\n').pop()!) as { status: string; text: string; requests: number };
    expect(result.status).toBe('done');
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.requests).toBeGreaterThanOrEqual(1);
  });

  it('every ts example of the README and docs/ type-checks against the installed package, and runs', async () => {
    // Each ```ts block is a whole module, as a user would paste it: compiled with tsc (strict,
    // NodeNext) against the installed package and what it imports, then run against the test
    // server. A block that needs what cannot run here is type-checked only, and says why below.
    const pages = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const blocks = pages.flatMap((page) =>
      [...readFileSync(join(ROOT, page), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m, i) => ({ page, i, source: m[1]! })),
    );
    expect(blocks.filter((b) => b.page === 'README.md').length, 'README blocks').toBeGreaterThanOrEqual(2);
    for (const entry of ['workmem/ai-sdk', 'workmem/langchain'])
      expect(
        blocks.filter((b) => b.page === 'README.md' && b.source.includes(`from '${entry}'`) && /\bcreateWorkmem\b/.test(b.source)).length,
        `a README example of ${entry}'s middleware`,
      ).toBe(1);
    // What a user installs beside workmem for them, at the versions we test with.
    const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    // A package's name from what is imported of it ('@langchain/core/messages' is @langchain/core's).
    const packageOf = (specifier: string): string =>
      specifier
        .split('/')
        .slice(0, specifier.startsWith('@') ? 2 : 1)
        .join('/');
    const imported = new Set(
      blocks.flatMap((b) =>
        [...b.source.matchAll(/from '([^'.][^']*)'/g)].map((m) => (m[1]!.startsWith('workmem') ? m[1]! : packageOf(m[1]!))),
      ),
    );
    const peers: Record<string, string[]> = {
      'workmem/postgres': ['pg', '@types/pg'],
      'workmem/langchain': ['langchain', '@langchain/core'],
    };
    const extra = [...new Set([...imported].flatMap((name) => (name.startsWith('workmem') ? (peers[name] ?? []) : [name])))].filter(
      // workmem's own dependencies (zod, xstate, keyv) come installed with it.
      (name) => !name.startsWith('node:') && !(name in ours.dependencies) && !['typescript', '@types/node'].includes(name),
    );
    expect(
      extra.filter((name) => !(name in ours.devDependencies)),
      'packages the examples import that the tests do not pin',
    ).toEqual([]);
    const wanted = ['@types/node', 'typescript', ...extra].map((name) => `${name}@${ours.devDependencies[name]}`);
    ok(
      run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', ...wanted], project, HANG_MS),
      'npm install',
    );
    // Type-checked as written.
    const files = blocks.map((b) => `example-${b.page.replace(/[/.]/g, '-')}-${b.i}.ts`);
    blocks.forEach((b, n) => writeFileSync(join(project, files[n]!), b.source));
    writeFileSync(
      join(project, 'machines-types.ts'),
      "import type { TurnHost, SessionHost, TurnInput } from 'workmem/machines';\n" +
        'export const hosts: [TurnHost | null, SessionHost | null, TurnInput | null] = [null, null, null];\n',
    );
    const tsconfig = {
      compilerOptions: {
        target: 'ES2023',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: ['node'],
      },
      files: [...files, 'machines-types.ts'],
    };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
    // tsc runs beside the examples (one core each): its verdict is read once they have run.
    const typeChecked = runAsync(
      process.execPath,
      [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
      project,
      env(),
    );
    const expectTypeChecked = async (): Promise<void> => {
      const tsc = await typeChecked;
      expect(tsc.status, `tsc on the examples:\n${tsc.stdout}\n${tsc.stderr}`).toBe(0);
    };

    // Run: against the test server (and a PostgreSQL when the tests have one). @keyv/sqlite compiles a
    // native addon, which this project (install scripts off, as pnpm 10 and Bun install) does not build.
    const ts = (await import('typescript')).default;
    const { startTestServer, protocolFollower } = await import(join(ROOT, 'dist', 'src', 'testing', 'index.js'));
    const server = await startTestServer({ policy: protocolFollower({ seed: 1 }) });
    const database = process.env.WORKMEM_TEST_DATABASE_URL;
    let ran = 0;
    try {
      for (const [n, block] of blocks.entries()) {
        // Type-checked only: a hosted provider (no network here), a whole eval suite (minutes).
        if (/^import .* from '@ai-sdk\/anthropic'/m.test(block.source) || /\brunEval\(/.test(block.source)) continue;
        if (/@keyv\/sqlite/.test(block.source) || (/workmem\/postgres/.test(block.source) && !database)) continue;
        const js = ts.transpileModule(block.source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
        const file = files[n]!.replace(/\.ts$/, '.mjs');
        writeFileSync(join(project, file), js.outputText);
        // Not spawnSync: the test server answers from this process's event loop.
        const result = await runAsync(process.execPath, [file], project, {
          ...env(),
          OPENAI_BASE_URL: server.baseURL,
          OPENAI_API_KEY: 'test', // as a user's environment has it (the test server takes any)
          WORKMEM_MODEL: 'workmem-test',
          ...(database ? { DATABASE_URL: database } : {}),
        });
        if (result.status !== 0) await expectTypeChecked(); // a type error explains a failed run best
        expect(result.status, `${block.page} block ${block.i + 1}:\n${block.source}\n${result.stdout}\n${result.stderr}`).toBe(0);
        ran++;
      }
    } finally {
      await server.close();
    }
    await expectTypeChecked();
    // Left out: docs/eval.md's (a hosted provider, a whole suite), docs/storage.md's @keyv/sqlite one, and without a database its PostgreSQL one.
    expect(ran, 'examples run').toBe(blocks.length - (database ? 2 : 3));
  }); // installs from the registry, then runs each example

  it('npx workmem --help, and rpc --help names a documentation file that exists', () => {
    expect(ok(run('npx', ['workmem', '--help'], project), 'workmem --help')).toMatch(/Commands:[\s\S]*\bdemo\b[\s\S]*\bviz\b/);
    const rpcHelp = ok(run('npx', ['workmem', 'rpc', '--help'], project), 'workmem rpc --help');
    const doc = /See (\S+rpc\.md)\./.exec(rpcHelp)?.[1];
    expect(doc, rpcHelp).toBeDefined();
    expect(existsSync(doc!), `${doc} from ${project}`).toBe(true);
    expect(readFileSync(doc!, 'utf8')).toContain('switch_session');
  });

  it('npx workmem demo completes and prints its table', () => {
    const out = ok(run('npx', ['workmem', 'demo'], project, HANG_MS), 'workmem demo');
    expect(out).toMatch(/prompt tokens sent/);
    expect(out).toMatch(/facts asked at the end\s*\|\s*\d+ \/ \d+/);
  });

  it('npx workmem eval runs offline from the package, and workmem/eval imports', () => {
    const args = [
      'workmem',
      'eval',
      '--model',
      'testing:lazy',
      '--suite',
      'small',
      '--limit',
      '1',
      '--arms',
      'workmem-auto,full-history',
      '--json',
    ];
    const result = JSON.parse(ok(run('npx', args, project, HANG_MS), 'workmem eval')) as { summary: { arm: string; findings: string[] }[] };
    expect(result.summary.map((a) => a.arm)).toEqual(['workmem-auto', 'full-history']);
    expect(result.summary[0]!.findings).toContain('memory never maintained — phase 2 never began; the fallback carried the session');
    writeFileSync(
      join(project, 'eval.mjs'),
      "import { runEval, builtInSuite } from 'workmem/eval';\nconsole.log(typeof runEval, builtInSuite('small').conversations.length);\n",
    );
    expect(ok(run(process.execPath, ['eval.mjs'], project), 'eval.mjs').trim()).toBe('function 3');
  });

  it('npx workmem viz --port 0 serves its page, script and stylesheet at the URL it prints', async () => {
    const child = spawn('npx', ['workmem', 'viz', '--port', '0'], { cwd: project, env: env(), detached: true });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        let err = '';
        const timer = setTimeout(() => reject(new Error(`no URL printed:\n${out}\n${err}`)), HANG_MS);
        child.stderr.on('data', (chunk: Buffer) => void (err += chunk));
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk;
          const found = /(http:\/\/\S+)/.exec(out);
          if (found) {
            clearTimeout(timer);
            resolve(found[1]!);
          }
        });
        child.on('exit', (code) => reject(new Error(`viz exited ${code}:\n${out}\n${err}`)));
      });
      const page = await fetch(url);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toMatch(/^<!doctype html>/i);
      const script = /<script[^>]*\ssrc="([^"]+)"/.exec(html)?.[1];
      const stylesheet = /<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      expect(stylesheet).toBeDefined();
      for (const [asset, type] of [
        [script!, 'javascript'],
        [stylesheet!, 'css'],
      ] as const) {
        const response = await fetch(new URL(asset, url));
        expect(response.status, asset).toBe(200);
        expect(response.headers.get('content-type'), asset).toContain(type);
        expect((await response.text()).length, asset).toBeGreaterThan(100);
      }
    } finally {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGTERM'); // npx and the node it started
    }
  });
});
