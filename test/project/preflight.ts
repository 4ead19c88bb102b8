/**
 * What the test suite needs from the machine, checked before anything is built or run, so
 * that a fresh machine stops within seconds naming what to install, instead of failing
 * (or skipping) tests minutes later. No test skips because something is missing: the one
 * way to run without PostgreSQL is to say so (WORKMEM_TEST_POSTGRES=off, as
 * `npm run test:unit` does), and the run then says which tests it leaves out.
 *
 * Run by `npm test` before the build (`tsx test/project/preflight.ts`: every need of the
 * whole suite), and as a vitest global setup, where each project checks its own needs (a
 * `vitest --project unit` run needs no browser).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { TestProject } from 'vitest/node';
import { postgresAvailable } from '../storage/postgresServer.js';
import { npmEnvironment } from '../installedOnce.js';

/** Debian's paths; elsewhere (Ubuntu's chromium-browser, a tmux of your own) the environment names them. */
export const CHROMIUM = process.env.WORKMEM_TEST_CHROMIUM || '/usr/bin/chromium';
export const TMUX = process.env.WORKMEM_TEST_TMUX || '/usr/bin/tmux';

type NeedName = 'chromium' | 'tmux' | 'postgres' | 'registry';

interface Need {
  /** What to install, as a user reads it. */
  what: string;
  /** Which tests use it. */
  usedBy: string;
  /** Debian's package, when there is one. */
  debian?: string;
  /** null when present, else what was found wrong. */
  check(): string | null;
}

const NEEDS: Record<NeedName, Need> = {
  chromium: {
    what: `Chromium at ${CHROMIUM}`,
    usedBy: "the visualizer's and the eval report's browser tests (*.browser.test.ts)",
    debian: 'chromium',
    check: () => (existsSync(CHROMIUM) ? null : 'not found'),
  },
  tmux: {
    what: `tmux at ${TMUX}`,
    usedBy: "chat's terminal tests (*.tmux.test.ts) and the reliability matrix's pastes",
    debian: 'tmux',
    check: () => (existsSync(TMUX) ? null : 'not found'),
  },
  postgres: {
    what: 'PostgreSQL (initdb and pg_ctl, or a server named by WORKMEM_TEST_DATABASE_URL)',
    usedBy: "the Postgres store's tests (*.pg.test.ts, and the PostgreSQL half of the stores' shared suites)",
    debian: 'postgresql',
    check: () => (postgresAvailable() ? null : 'not found'),
  },
  registry: {
    what: 'the npm registry, reached with your npm settings',
    usedBy: 'the pack test and the agents the tests install from npm (pi, LangGraph.js)',
    check: registryProblem,
  },
};

/** Each project's needs, by the project's name in vitest.config.ts. */
const BY_PROJECT: Record<string, NeedName[]> = {
  unit: ['postgres'],
  slow: ['postgres', 'tmux', 'registry'],
  process: ['registry'],
  tmux: ['tmux'],
  browser: ['chromium'],
  pg: ['postgres'],
  pack: ['registry'],
};

/** Whether the run said it goes without PostgreSQL. */
const postgresOff = (): boolean => process.env.WORKMEM_TEST_POSTGRES === 'off';

function registryProblem(): string | null {
  if (process.env.WORKMEM_TEST_REGISTRY_OK === '1') return null; // checked once per run
  // No retries, a bounded wait: an unreachable registry is told in seconds, not after npm's minutes of retries.
  const ping = spawnSync('npm', ['ping', '--fetch-retries=0', '--fetch-timeout=20000', '--loglevel=error'], {
    encoding: 'utf8',
    env: npmEnvironment(),
    timeout: 60_000,
  });
  if (ping.status === 0) {
    process.env.WORKMEM_TEST_REGISTRY_OK = '1';
    return null;
  }
  // npm's first words of the error (its code and message), not the line pointing at its log.
  const lines = `${ping.stderr ?? ''}\n${ping.error?.message ?? ''}`
    .split('\n')
    .filter((l) => l.trim() && !/complete log of this run/.test(l));
  const said = lines
    .slice(0, 2)
    .join('; ')
    .replace(/npm error /g, '');
  return `npm ping failed${said ? `: ${said}` : ''}`;
}

/** The needs of `projects` that are missing, each with what was found wrong. */
export function missing(projects: readonly string[]): { name: NeedName; need: Need; problem: string }[] {
  const names = new Set(projects.flatMap((p) => BY_PROJECT[p] ?? []));
  if (postgresOff()) names.delete('postgres');
  return [...names].flatMap((name) => {
    const problem = NEEDS[name].check();
    return problem ? [{ name, need: NEEDS[name], problem }] : [];
  });
}

/** What to tell the user: what is missing, what uses it, and how to install it; `subject` needs them ("npm test needs"). */
export function advice(gaps: ReturnType<typeof missing>, subject: string): string {
  const packages = gaps.flatMap((g) => (g.need.debian ? [g.need.debian] : []));
  return [
    `${subject} what this machine lacks:`,
    ...gaps.map((g) => `  - ${g.need.what} (${g.problem}): for ${g.need.usedBy}`),
    ...(packages.length ? [`Install on Debian or Ubuntu: sudo apt-get install ${packages.join(' ')}`] : []),
    ...(gaps.some((g) => g.name === 'registry')
      ? ['The registry: check your network, proxy (HTTPS_PROXY) and npm settings (npm config ls; NODE_EXTRA_CA_CERTS for a TLS proxy).']
      : []),
    ...(gaps.some((g) => g.name === 'postgres')
      ? ['Or run without PostgreSQL, its tests left out and listed: WORKMEM_TEST_POSTGRES=off npm test']
      : []),
    'Then run it again. docs/testing.md says what each kind of test needs.',
  ].join('\n');
}

export class MissingPrerequisites extends Error {
  override name = 'MissingPrerequisites';
}

/** vitest's global setup: a project whose needs are missing stops the run before any test, saying what to install. */
export default function setup(project: TestProject): void {
  if (!project.name) return; // the root project: no tests of its own
  const gaps = missing([project.name]);
  if (!gaps.length) return;
  // All that the run's projects lack, said at once: not one missing tool per attempt.
  const all = missing(project.vitest.projects.map((p) => p.name));
  throw new MissingPrerequisites(advice(all, `The ${project.name} tests (and the others of this run) need`));
}

// `npm test`'s first step: every project's needs, before the build.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const gaps = missing(Object.keys(BY_PROJECT));
  if (gaps.length) {
    process.stderr.write(`${advice(gaps, 'npm test needs')}\n`);
    process.exit(1);
  }
}
