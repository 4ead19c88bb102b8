/** `workmem serve` run as users run it: the built CLI in a child process, its URL read from what it prints. */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach } from 'vitest';
import { cliPath } from '../cli/cliProcess.js';
import { HANG_MS } from '../hangGuard.js';

export interface ServeProcess {
  url: string;
  /** The token it printed for its clients. */
  token: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM, and its exit code. */
  stop(): Promise<number | null>;
}

/** `const serve = serveProcesses();` in a file: each started proxy is stopped after its test. */
export function serveProcesses(): (args: string[], env: NodeJS.ProcessEnv) => Promise<ServeProcess> {
  const started: ServeProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((p) => p.stop()));
  });
  return (args, env) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [cliPath(), 'serve', ...args], {
        env: { PATH: process.env.PATH, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
      const stop = async (): Promise<number | null> => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
        const code = await exited;
        clearTimeout(kill);
        return code;
      };
      const timer = setTimeout(() => reject(new Error(`workmem serve did not start: ${out}`)), HANG_MS);
      const read = (chunk: Buffer): void => {
        out += chunk;
        const url = /workmem serve on (http:\/\/\S+\/v1)/.exec(out)?.[1];
        const token = /(?:OPENAI_API_KEY=|x-workmem-token: )(\S+?);/.exec(out)?.[1];
        if (url && token) {
          clearTimeout(timer);
          const proc = { url, token, child, output: () => out, stop };
          started.push(proc);
          resolve(proc);
        }
      };
      child.stdout!.on('data', read);
      child.stderr!.on('data', read);
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`workmem serve exited (${code}): ${out}`));
      });
    });
}
