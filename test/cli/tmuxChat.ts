/**
 * The built `workmem chat` in tmux, as a user runs it in a terminal: a tmux server of its
 * own (-L), keys with send-keys, bracketed pastes with load-buffer and paste-buffer -p,
 * the screen with capture-pane.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliPath } from './cliProcess.js';
import { TMUX } from '../project/preflight.js';
import { HANG_MS } from '../hangGuard.js';

export const hasTmux = existsSync(TMUX);

export class Tmux {
  readonly socket = `workmem-chat-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  private started = false;

  constructor(private readonly env: Record<string, string>) {}

  tmux(...args: string[]): string {
    return execFileSync(TMUX, ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }

  /**
   * `workmem chat <args>` in a fresh 120×50 pane, through sh, which prints the exit status
   * when it ends (tmux's own pane_dead_status is sometimes never filled in); the pane stays.
   */
  start(args: string[], cwd: string): void {
    const env = Object.entries(this.env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const command = [process.execPath, cliPath(), 'chat', ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
    this.tmux('new-session', '-d', '-x', '120', '-y', '50', '-c', cwd, ...env, `${command}; echo "[exit $?]"`);
    this.started = true;
    this.tmux('set-option', '-g', 'remain-on-exit', 'on');
  }

  keys(...keys: string[]): void {
    this.tmux('send-keys', ...keys);
  }

  type(text: string): void {
    this.tmux('send-keys', '-l', text);
  }

  /** Paste as a terminal does: bracketed (the application asked for it). */
  paste(text: string, dir: string): void {
    const file = join(dir, 'paste.txt');
    writeFileSync(file, text);
    this.tmux('load-buffer', '-b', 'test', file);
    this.tmux('paste-buffer', '-p', '-b', 'test');
  }

  /** Everything the program writes to the terminal from now on, appended to `file` (tmux pipe-pane). */
  recordOutput(file: string): void {
    this.tmux('pipe-pane', '-O', `cat >> '${file.replaceAll("'", `'\\''`)}'`);
  }

  stopRecording(): void {
    this.tmux('pipe-pane');
  }

  screen(): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-500');
  }

  /** The process has ended: its exit status, or null while it runs. */
  exitStatus(): number | null {
    const status = /^\[exit (\d+)\]$/m.exec(this.screen());
    return status ? Number(status[1]) : null;
  }

  async until<T>(what: string, check: () => T | null | undefined | false, timeoutMs = HANG_MS): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; the screen:\n${this.started ? this.screen() : '(closed)'}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Waits for `pattern` to occur `count` times on the screen. */
  seen(pattern: string | RegExp, count = 1, timeoutMs?: number): Promise<string> {
    const re = typeof pattern === 'string' ? new RegExp(escape(pattern), 'g') : new RegExp(pattern.source, 'g');
    return this.until(
      `${re} ×${count}`,
      () => {
        const screen = this.screen();
        return (screen.match(re)?.length ?? 0) >= count ? screen : null;
      },
      timeoutMs,
    );
  }

  /** Idle at an empty prompt (keys sent before it would reach a running command). */
  prompt(): Promise<string> {
    return this.until('the prompt', () => {
      const screen = this.screen();
      return lastLine(screen) === '›' && screen;
    });
  }

  kill(): void {
    if (this.started) this.tmux('kill-server');
    this.started = false;
  }
}

export function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The prompt, once drawn and empty: the last line of the screen that has text. */
export function lastLine(screen: string): string {
  return screen.trimEnd().split('\n').at(-1) ?? '';
}
