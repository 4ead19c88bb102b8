/**
 * Packages from the registry that a test or the bench runs beside workmem (pi, the LangGraph.js
 * peer), installed once per machine and version. They are kept in the machine's own temporary
 * folder, not a test run's (which goes at the run's end): installing takes seconds of CPU.
 * Installed beside their place, then renamed into it whole, so that a run beside this one
 * never sees half an install.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The environment a child npm gets: the user's, so that it reaches the registry the way their
 * own `npm install` does (npm_config_* such as the registry and cafile, NODE_EXTRA_CA_CERTS,
 * HTTPS_PROXY and NO_PROXY, HOME for ~/.npmrc), less what describes the npm script this run
 * was started by (`npm test`: workmem's own package, its lifecycle event, its folder).
 */
export function npmEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(([key]) => !/^npm_(package|lifecycle)_|^npm_command$|^npm_config_local_prefix$|^INIT_CWD$/.test(key)),
  );
}

/** The folder `packages` are installed in (`folder` under the lasting temporary folder); `marker` exists once they are. */
export function installedOnce(folder: string, packages: readonly string[], marker: string): string {
  const dir = join(process.env.WORKMEM_TEST_LASTING_TMPDIR ?? tmpdir(), folder);
  if (existsSync(join(dir, marker))) return dir;
  rmSync(dir, { recursive: true, force: true }); // what an install cut short left
  const staging = mkdtempSync(`${dir}-`);
  const installed = spawnSync(
    'npm',
    ['install', '--prefix', staging, '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--loglevel=error', ...packages],
    { encoding: 'utf8', timeout: 5 * 60_000, env: npmEnvironment() },
  );
  if (installed.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`npm could not install ${packages.join(' ')}: ${installed.stderr}`);
  }
  try {
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(join(dir, marker))) throw error; // else a run beside this one put its own in place first
  }
  return dir;
}
