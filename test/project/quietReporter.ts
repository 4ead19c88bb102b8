/**
 * A passing run prints only the reporter, and skips nothing: this reporter, beside vitest's own,
 * fails the run (exit code 1) when a test was skipped (below), or when a test printed anything — console output, and process warnings, which
 * test/warningsAsLogs.ts turns into console output — and names the tests that did. The
 * lines are still shown by the default reporter; here they are counted.
 */
import type { UserConsoleLog } from 'vitest';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

const SHOWN = 10;

export default class QuietReporter implements Reporter {
  private vitest: Vitest | null = null;
  private readonly printed: UserConsoleLog[] = [];

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onUserConsoleLog(log: UserConsoleLog): void {
    this.printed.push(log);
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    this.noSkips(modules);
    if (!this.printed.length) return;
    const where = (log: UserConsoleLog): string => {
      const task = log.taskId ? this.vitest?.state.idMap.get(log.taskId) : undefined;
      return task ? `${task.file?.name ?? ''} > ${task.name}` : 'outside a test';
    };
    const lines = this.printed
      .slice(0, SHOWN)
      .map((log) => `  ${log.type} from ${where(log)}: ${log.content.trim().split('\n')[0]!.slice(0, 160)}`);
    const more = this.printed.length > SHOWN ? [`  … and ${this.printed.length - SHOWN} more`] : [];
    process.stderr.write(
      `\nquiet run: tests printed ${this.printed.length} time${this.printed.length === 1 ? '' : 's'}; a passing run prints only the reporter (assert on figures instead of printing them, and give warnings a place to go):\n${[...lines, ...more].join('\n')}\n`,
    );
    process.exitCode = 1;
  }

  /**
   * No test skips silently: a skipped test fails the run and is named, unless the run left it
   * out on purpose, by name (-t) or by WORKMEM_TEST_POSTGRES=off, which then says how many it left out.
   * A missing tool stops the run before it starts instead (preflight.ts).
   */
  private noSkips(modules: ReadonlyArray<TestModule>): void {
    const skipped = modules.flatMap((m) => [...m.children.allTests('skipped')]);
    if (!skipped.length || this.vitest?.config.testNamePattern) return;
    if (process.env.WORKMEM_TEST_POSTGRES === 'off') {
      process.stderr.write(`\nWORKMEM_TEST_POSTGRES=off: ${skipped.length} tests left out (the Postgres store's)\n`);
      return;
    }
    const names = skipped.slice(0, SHOWN).map((t) => `  ${t.module.moduleId.replace(`${process.cwd()}/`, '')} > ${t.fullName}`);
    const more = skipped.length > SHOWN ? [`  … and ${skipped.length - SHOWN} more`] : [];
    process.stderr.write(
      `\nno skipped tests: ${skipped.length} test${skipped.length === 1 ? ' was' : 's were'} skipped (a test runs, or the run stops before it starts naming what it lacks):\n${[...names, ...more].join('\n')}\n`,
    );
    process.exitCode = 1;
  }
}
