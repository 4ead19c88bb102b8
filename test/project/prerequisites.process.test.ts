/**
 * What the test suite needs from a machine (preflight.ts), tried as a fresh machine meets
 * it: with Chromium, tmux and the registry out of reach, `npm test`'s first step stops at
 * once and names each with what uses it and how to install it. And a package installed
 * from the registry for a test (installedOnce.ts) comes from the registry the user's npm
 * settings name, here a registry of our own on 127.0.0.1 that serves one package.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installedOnce, npmEnvironment } from '../installedOnce.js';
import { tempHome } from '../tempHomes.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** A registry that serves one package (argv: its name, its tarball, the tarball's integrity) and prints its port. */
const REGISTRY = `
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
const [name, file, integrity] = process.argv.slice(1);
const server = createServer((request, response) => {
  const base = 'http://127.0.0.1:' + server.address().port;
  if (request.url === '/' + name) {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ name, 'dist-tags': { latest: '1.0.0' }, versions: { '1.0.0': {
      name, version: '1.0.0', main: 'index.js', dist: { tarball: base + '/' + name + '-1.0.0.tgz', integrity } } } }));
  } else if (request.url === '/' + name + '-1.0.0.tgz') response.end(readFileSync(file));
  else response.writeHead(404).end('{}');
});
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
`;

describe("npm test's first step on a machine that lacks what the tests need", () => {
  it('stops, naming Chromium, tmux and the registry, what uses each and the packages to install', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'test/project/preflight.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: {
        ...process.env,
        WORKMEM_TEST_CHROMIUM: join(tempHome(), 'no-chromium'),
        WORKMEM_TEST_TMUX: join(tempHome(), 'no-tmux'),
        npm_config_registry: 'http://127.0.0.1:9/', // the discard port: nothing answers
        WORKMEM_TEST_REGISTRY_OK: '',
      },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^npm test needs what this machine lacks:\n/);
    expect(run.stderr).toMatch(/  - Chromium at \S+no-chromium \(not found\): for the visualizer's and the eval report's browser tests/);
    expect(run.stderr).toMatch(/  - tmux at \S+no-tmux \(not found\): for chat's terminal tests/);
    expect(run.stderr).toMatch(
      /  - the npm registry, reached with your npm settings \(npm ping failed: code ECONNREFUSED.*\): for the pack test/,
    );
    expect(run.stderr).toMatch(/\nInstall on Debian or Ubuntu: sudo apt-get install (tmux chromium|chromium tmux)\n/);
    expect(run.stdout).toBe('');
  });

  it('passes on this machine, which has them all', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'test/project/preflight.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe('a package a test installs from the registry', () => {
  let registry: ChildProcess | undefined;
  const made: string[] = [];
  afterEach(() => {
    registry?.kill();
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("comes from the registry the user's npm settings name (npm_config_registry)", async () => {
    const name = `workmem-registry-probe-${process.pid}`;
    const source = tempHome();
    writeFileSync(join(source, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(source, 'index.js'), "module.exports = 'from the registry of the user';\n");
    const packed = spawnSync('npm', ['pack', '--silent', '--pack-destination', source], {
      cwd: source,
      encoding: 'utf8',
      env: npmEnvironment(),
    });
    expect(packed.status, packed.stderr).toBe(0);
    const tarball = readFileSync(join(source, packed.stdout.trim().split('\n').at(-1)!));
    const integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
    // In a process of its own: installedOnce waits for npm synchronously, and this process would not answer meanwhile.
    registry = spawn(process.execPath, ['--input-type=module', '-e', REGISTRY, name, join(source, 'probe.tgz'), integrity], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    writeFileSync(join(source, 'probe.tgz'), tarball);
    const port = await new Promise<number>((resolve, reject) => {
      registry!.stdout!.once('data', (d: Buffer) => resolve(Number(/listening (\d+)/.exec(String(d))?.[1])));
      registry!.once('exit', (code) => reject(new Error(`the registry exited (${code})`)));
    });
    // As the user's environment would say it; and an npm cache of the test's own, so nothing comes from a cache.
    const saved = { registry: process.env.npm_config_registry, cache: process.env.npm_config_cache };
    process.env.npm_config_registry = `http://127.0.0.1:${port}/`;
    process.env.npm_config_cache = join(tempHome(), 'npm-cache');
    try {
      const folder = `workmem-test-probe-${process.pid}`;
      const dir = installedOnce(folder, [`${name}@1.0.0`], join('node_modules', name, 'index.js'));
      made.push(dir);
      expect(readFileSync(join(dir, 'node_modules', name, 'index.js'), 'utf8')).toContain('from the registry of the user');
    } finally {
      for (const [key, value] of Object.entries({ npm_config_registry: saved.registry, npm_config_cache: saved.cache }))
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
    }
  });

  it("passes the user's TLS and proxy settings, and none of the npm script this run was started by", () => {
    const env = npmEnvironment({
      PATH: '/bin',
      HOME: '/home/ada',
      NODE_EXTRA_CA_CERTS: '/etc/corp-ca.pem',
      HTTPS_PROXY: 'http://proxy:3128',
      NO_PROXY: 'localhost',
      npm_config_registry: 'https://npm.corp/',
      npm_config_cafile: '/etc/corp-ca.pem',
      npm_package_name: 'workmem',
      npm_lifecycle_event: 'test',
      npm_config_local_prefix: '/work/workmem',
      INIT_CWD: '/work/workmem',
    });
    expect(env).toEqual({
      PATH: '/bin',
      HOME: '/home/ada',
      NODE_EXTRA_CA_CERTS: '/etc/corp-ca.pem',
      HTTPS_PROXY: 'http://proxy:3128',
      NO_PROXY: 'localhost',
      npm_config_registry: 'https://npm.corp/',
      npm_config_cafile: '/etc/corp-ca.pem',
    });
  });
});
