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

/** What npm needs of the environment to reach the registry: the path, the home, and how this machine trusts and reaches the network. */
function installEnv(): NodeJS.ProcessEnv {
  const kept = /^(PATH|HOME|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|HTTPS?_PROXY|NO_PROXY|npm_config_.*)$/i;
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => kept.test(name)));
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
    { encoding: 'utf8', timeout: 5 * 60_000, env: installEnv() },
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
