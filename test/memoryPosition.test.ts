/**
 * The memoryPosition setting (docs/design.md §4): where a request carries the working
 * memory. 'before-history' (the default, the spec's order) or 'after-history'; set by an
 * embedder, WM_MEMORY_POSITION, or the CLI's flag and config.json.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveSettings } from '../src/settings/config.js';
import { loadConfig, settingsOf } from '../src/cli/config.js';

describe('the memoryPosition setting', () => {
  const model = { contextWindow: 8000, maxOutputTokens: 1000 };

  it("defaults to 'before-history'; an embedder or WM_MEMORY_POSITION set it, the embedder first", () => {
    expect(resolveSettings(model, {}, {}).turn.memoryPosition).toBe('before-history');
    expect(resolveSettings(model, { memoryPosition: 'after-history' }, {}).turn.memoryPosition).toBe('after-history');
    expect(resolveSettings(model, {}, { WM_MEMORY_POSITION: 'after-history' }).turn.memoryPosition).toBe('after-history');
    expect(resolveSettings(model, {}, { WM_MEMORY_POSITION: ' ' }).turn.memoryPosition).toBe('before-history');
    expect(resolveSettings(model, { memoryPosition: 'before-history' }, { WM_MEMORY_POSITION: 'after-history' }).turn.memoryPosition).toBe('before-history');
  });

  it('refuses any other value, naming the setting and the value', () => {
    expect(() => resolveSettings(model, { memoryPosition: 'last' as never }, {})).toThrow(ConfigError);
    expect(() => resolveSettings(model, { memoryPosition: 'last' as never }, {})).toThrow(/setting memoryPosition="last" is invalid/);
    expect(() => resolveSettings(model, {}, { WM_MEMORY_POSITION: 'after' })).toThrow(
      /WM_MEMORY_POSITION="after" is invalid: expected before-history or after-history/,
    );
  });

  it('the CLI reads it from flags > WM_MEMORY_POSITION > config.json', () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-position-'));
    try {
      expect(settingsOf(loadConfig({ home }, {})).memoryPosition).toBeUndefined();
      writeFileSync(join(home, 'config.json'), JSON.stringify({ memoryPosition: 'after-history' }));
      expect(settingsOf(loadConfig({ home }, {})).memoryPosition).toBe('after-history');
      expect(settingsOf(loadConfig({ home }, { WM_MEMORY_POSITION: 'before-history' })).memoryPosition).toBe('before-history');
      expect(settingsOf(loadConfig({ home, 'memory-position': 'after-history' }, { WM_MEMORY_POSITION: 'before-history' })).memoryPosition).toBe(
        'after-history',
      );
      expect(() => loadConfig({ home, 'memory-position': 'middle' }, {})).toThrow(/--memory-position = "middle" is invalid/);
      writeFileSync(join(home, 'config.json'), JSON.stringify({ memoryPosition: 'top' }));
      expect(() => loadConfig({ home }, {})).toThrow(/config\.json: memoryPosition = "top" is invalid/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
