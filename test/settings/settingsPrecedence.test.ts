/**
 * Where a setting comes from (issue 18): flags > environment > <home>/config.json >
 * defaults, each pair tested; a reminder maximum below the default minimum is taken,
 * with the minimum lowered to it and a warning that says so.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, settingsOf } from '../../src/cli/config.js';
import { ConfigError, resolveSettings } from '../../src/settings/config.js';
import type { TestServer } from '../../src/testing/index.js';
import { runCli as cli } from '../cli/cliProcess.js';
import { cliServerEnv, tempHome } from '../helpers.js';

const model = { contextWindow: 8000, maxOutputTokens: 500 };

function homeWith(config: object): string {
  const home = tempHome();
  writeFileSync(join(home, 'config.json'), JSON.stringify(config));
  return home;
}

/** The reminder settings the CLI would run a session with. */
function cliReminder(flags: Record<string, unknown>, env: NodeJS.ProcessEnv) {
  return resolveSettings(model, settingsOf(loadConfig(flags, env)), env).turn.reminder;
}

describe('configuration precedence: flags > environment > config.json', () => {
  it('environment beats config.json (WORKMEM_MODEL, OPENAI_BASE_URL, WM_*)', () => {
    const home = homeWith({
      model: 'from-file',
      baseURL: 'http://127.0.0.1:1/file',
      reminder: { maxRounds: 9, minRounds: 4, tokenThreshold: 60, enabled: true },
    });
    const env = {
      WORKMEM_MODEL: 'from-env',
      OPENAI_BASE_URL: 'http://127.0.0.1:1/env',
      WM_MAX_ROUNDS: '7',
      WM_MIN_ROUNDS: '2',
      WM_TOKEN_THRESHOLD: '50',
      WM_ENABLE_REMINDER: 'false',
    };
    const config = loadConfig({ home }, env);
    expect(config).toMatchObject({ model: 'from-env', baseURL: 'http://127.0.0.1:1/env' });
    expect(cliReminder({ home }, env)).toEqual({ enabled: false, maxRounds: 7, minRounds: 2, tokenThreshold: 50 });
    // What the environment leaves unset still comes from the file.
    expect(cliReminder({ home }, { WM_MAX_ROUNDS: '8' })).toEqual({ enabled: true, maxRounds: 8, minRounds: 4, tokenThreshold: 60 });
  });

  it('flags beat the environment', () => {
    const config = loadConfig(
      { home: tempHome(), model: 'from-flag', 'base-url': 'http://127.0.0.1:1/flag' },
      { WORKMEM_MODEL: 'from-env', OPENAI_BASE_URL: 'http://127.0.0.1:1/env' },
    );
    expect(config).toMatchObject({ model: 'from-flag', baseURL: 'http://127.0.0.1:1/flag' });
  });

  it('flags beat config.json', () => {
    const home = homeWith({ model: 'from-file', contextWindow: 9000, language: 'en' });
    const config = loadConfig({ home, model: 'from-flag', 'context-window': '12000', language: 'zh' }, {});
    expect(config).toMatchObject({ model: 'from-flag', contextWindow: 12000, language: 'zh' });
  });

  it('for an embedder, its settings beat WM_* (the environment is the fallback)', () => {
    const resolved = resolveSettings(model, { reminder: { maxRounds: 9 } }, { WM_MAX_ROUNDS: '4' });
    expect(resolved.turn.reminder.maxRounds).toBe(9);
  });
});

describe('WM_BACKGROUND_THRESHOLD', () => {
  it('takes a share above 0.01 or off, and refuses anything else with the name and value', () => {
    const background = (value: string) => resolveSettings(model, {}, { WM_BACKGROUND_THRESHOLD: value }).turn.backgroundThreshold;
    expect(background('0.5')).toBe(0.5);
    expect(background(' .4 ')).toBe(0.4);
    for (const off of ['off', 'OFF', 'false', 'no', '0']) expect(background(off)).toBeNull();
    expect(resolveSettings(model, {}, {}).turn.backgroundThreshold).toBe(0.6);
    for (const bad of ['0.01', '1', '60', '-0.5', 'soon'])
      expect(() => background(bad)).toThrow(
        new ConfigError(
          `WM_BACKGROUND_THRESHOLD=${JSON.stringify(bad)} is invalid: expected a share of the window between 0.01 and 1 (0.6), or off`,
        ),
      );
    expect(() => background('0.8')).toThrow(/backgroundThreshold \(0\.8\) must be below fallbackThreshold \(0\.75\)/);
  });
});

describe('reminder minimum and maximum', () => {
  it('WM_MAX_ROUNDS=2 alone is taken: the default minimum (3) is lowered to 2, and a warning says so', () => {
    const resolved = resolveSettings(model, {}, { WM_MAX_ROUNDS: '2' });
    expect(resolved.turn.reminder).toMatchObject({ maxRounds: 2, minRounds: 2 });
    expect(resolved.warnings).toEqual(['reminder maxRounds is 2, below the default minRounds of 3: minRounds is lowered to 2']);
    // The same from an embedder's settings and from config.json.
    expect(resolveSettings(model, { reminder: { maxRounds: 1 } }, {}).turn.reminder).toMatchObject({ maxRounds: 1, minRounds: 1 });
    expect(cliReminder({ home: homeWith({ reminder: { maxRounds: 2 } }) }, {})).toMatchObject({ maxRounds: 2, minRounds: 2 });
  });

  it('no warning when nothing is lowered', () => {
    expect(resolveSettings(model, {}, {}).warnings).toEqual([]);
    expect(resolveSettings(model, {}, { WM_MAX_ROUNDS: '3' }).warnings).toEqual([]);
  });

  it('a minimum given explicitly above the maximum is still an error that names both', () => {
    expect(() => resolveSettings(model, {}, { WM_MAX_ROUNDS: '2', WM_MIN_ROUNDS: '4' })).toThrow(ConfigError);
    expect(() => resolveSettings(model, {}, { WM_MAX_ROUNDS: '2', WM_MIN_ROUNDS: '4' })).toThrow(
      /reminder minRounds \(4\) is larger than maxRounds \(2\)/,
    );
    expect(() => resolveSettings(model, { reminder: { minRounds: 6 } }, {})).toThrow(/minRounds \(6\) is larger than maxRounds \(5\)/);
  });

  describe('the CLI', () => {
    let server: TestServer | undefined;
    afterAll(async () => server?.close());

    it('runs with WM_MAX_ROUNDS=2 and prints the warning on stderr', async () => {
      const setup = await cliServerEnv();
      server = setup.server;
      const result = await cli(['run', 'hello'], { env: { ...setup.env, WM_MAX_ROUNDS: '2' } });
      expect(result.code).toBe(0);
      expect(result.stderr).toContain('workmem: reminder maxRounds is 2, below the default minRounds of 3: minRounds is lowered to 2\n');
    });
  });
});
