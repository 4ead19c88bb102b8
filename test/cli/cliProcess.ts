/**
 * The built CLI run as a child process, as users run it: its exit code and output. Used
 * by the CLI tests and by the reliability matrix (is a key ever printed?).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { builtFile } from '../reliability/built.js';
import { HANG_MS } from '../hangGuard.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** dist/src/cli.js (throws, saying to build, when it is missing). */
export const cliPath = (): string => builtFile('src/cli/bin.js');

export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath(), ...args], {
      env: { PATH: process.env.PATH, ...options.env },
      cwd: options.cwd ?? process.cwd(),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`workmem ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? HANG_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/**
 * The built CLI started with `args`, left running until `ready` appears on its stdout:
 * its command line as other local users read it then (/proc/<pid>/cmdline, Linux), and
 * its stderr so far. The process is killed afterwards.
 */
export async function cmdlineWhileRunning(args: string[], ready: string): Promise<{ cmdline: string; stderr: string }> {
  const child = spawn(process.execPath, [cliPath(), ...args], { env: { PATH: process.env.PATH } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  try {
    const end = Date.now() + HANG_MS;
    while (!stdout.includes(ready)) {
      if (Date.now() > end || child.exitCode !== null) throw new Error(`workmem ${args.join(' ')} did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'latin1');
    return { cmdline: cmdline.replace(/\0+$/, '').replaceAll('\0', ' '), stderr };
  } finally {
    child.kill('SIGKILL');
  }
}
