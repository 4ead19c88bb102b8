import { describe, expect, it } from 'vitest';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { ConfigError, resolveSettings, type SettingsOverrides } from '../../src/settings/config.js';
import { SEED_LAYOUT } from '../../src/eval/arms.js';
import { collect, newSession, ofType, splitTail } from '../helpers.js';
import { logOf } from '../storage/stores.js';

const compact: ScriptedReply = { toolCalls: [{ name: 'compact_history', arguments: { target: 'conversation', keep_recent: 2 } }] };
const WINDOW = 8000;
const MODEL = { contextWindow: WINDOW, maxOutputTokens: 1000 };

/** Questions of about 110 tokens each: 3 are under 20 % of the window, 20 are over it. */
const question = (i: number): string => `Question ${i}: ${'context '.repeat(100)}`;

describe('compact_history under compactHistoryFloor', () => {
  it('below 20 % of the window (the default) it compacts nothing and says why; above it, it compacts', async () => {
    const replies: ScriptedReply[] = [
      ...Array.from({ length: 3 }, () => ({ text: 'ok' })),
      compact,
      { text: 'Not needed, then.' },
      ...Array.from({ length: 17 }, () => ({ text: 'ok' })),
      compact,
      { text: 'Compacted.' },
      { text: 'Next.' },
    ];
    const llm = scriptedModel(replies, { contextWindow: WINDOW });
    const session = await newSession({ llm, settings: { injectHistory: true } });
    const events = collect(session);
    for (let i = 1; i <= 3; i++) await session.prompt(question(i));
    await session.prompt('Please compact.');

    const refused = ofType(events, 'tool_end')[0]!;
    expect(refused.isError).toBe(false);
    const share = /^Not compacted: the request uses (\d+) % of the window; below 20 % no compaction is needed\.$/.exec(refused.content);
    expect(share).not.toBeNull();
    expect(Number(share![1])).toBeLessThan(20);
    expect(ofType(events, 'compaction_end')).toEqual([]);
    // The request after it carries the whole history and no "just compacted" reminder.
    const after = llm.requests[4]!;
    expect(after.messages.some((m) => m.content?.startsWith('Question 1:'))).toBe(true);
    expect(splitTail(after.messages.at(-1)!.content!).reminder ?? '').not.toContain('The history was just compacted');
    expect((await logOf(session)).filter((e) => e.type === 'compaction')).toEqual([]);

    for (let i = 4; i <= 20; i++) await session.prompt(question(i));
    await session.prompt('Compact now.');
    const done = ofType(events, 'tool_end')[1]!;
    expect(done.content).toMatch(/^Compacted turns 1-\d+: \d+ messages archived verbatim/);
    expect(ofType(events, 'compaction_end')).toEqual([expect.objectContaining({ reason: 'llm' })]);
    await session.close();
  });

  it("0 (the seed layout's) compacts whatever the share; a floor of 1 or more is refused with a clear error", async () => {
    expect(SEED_LAYOUT.compactHistoryFloor).toBe(0);
    const llm = scriptedModel([...Array.from({ length: 4 }, () => ({ text: 'ok' })), compact, { text: 'done' }], { contextWindow: WINDOW });
    const session = await newSession({ llm, settings: { injectHistory: true, compactHistoryFloor: 0 } });
    const events = collect(session);
    for (let i = 1; i <= 4; i++) await session.prompt(question(i));
    await session.prompt('Please compact.');
    expect(ofType(events, 'tool_end')[0]!.content).toMatch(/^Compacted turns 1-2:/);
    await session.close();

    const bad = newSession({ llm: scriptedModel([]), settings: { compactHistoryFloor: 1 } });
    await expect(bad).rejects.toThrow(ConfigError);
    await expect(newSession({ llm: scriptedModel([]), settings: { compactHistoryFloor: 1 } })).rejects.toThrow(
      /setting compactHistoryFloor=1 is invalid/,
    );
    // At or above the fallback's threshold it would refuse every call: said when given, lowered to 0 when only the threshold was.
    await expect(newSession({ llm: scriptedModel([]), settings: { compactHistoryFloor: 0.3, fallbackThreshold: 0.3 } })).rejects.toThrow(
      /compactHistoryFloor \(0\.3\) must be below fallbackThreshold \(0\.3\)/,
    );
    const early = await newSession({ llm: scriptedModel([]), settings: { fallbackThreshold: 0.15 } });
    expect(early.settings.compactHistoryFloor).toBe(0);
    await early.close();
  });

  it("the system prompt's compression guide opens its first band at the floor, the seed's 20 % for 0 and the default", async () => {
    const guide = async (settings: SettingsOverrides): Promise<string> => {
      const llm = scriptedModel([{ text: 'ok' }], { contextWindow: WINDOW });
      const session = await newSession({ llm, settings });
      await session.prompt('Hello.');
      await session.close();
      const system = llm.requests[0]!.messages[0]!.content!;
      return system.slice(system.indexOf('Act on tokens_percent:'), system.indexOf('Always keep'));
    };
    const seed = await guide({});
    expect(seed).toContain('- below 20 %: normal work, no compaction needed\n- 20-40 %: light:');
    expect(await guide({ compactHistoryFloor: 0 })).toBe(seed);
    const floor30 = await guide({ compactHistoryFloor: 0.3 });
    expect(floor30).toContain('- below 30 %: normal work, no compaction needed\n- 30-40 %: light:');
    expect(floor30).toContain('- 40-60 %: medium:');
    // Past the light band it is left out, and no band runs past the system's own threshold.
    const floor45 = await guide({ compactHistoryFloor: 0.45, fallbackThreshold: 0.7 });
    expect(floor45).toContain('- below 45 %: normal work, no compaction needed\n- 45-60 %: medium:');
    expect(floor45).not.toContain('light');
    expect(floor45).toContain('- 60-70 %: heavy:');
    expect(floor45).toContain('- above 70 %: the system compacts by itself');
  });

  it('WM_COMPACT_HISTORY_FLOOR sets it where no setting does (workmem serve and run take it so), and anything but a share is refused', () => {
    const floor = (env: NodeJS.ProcessEnv, overrides: SettingsOverrides = {}) =>
      resolveSettings(MODEL, overrides, env).turn.compactHistoryFloor;
    expect(floor({})).toBe(0.2);
    expect(floor({ WM_COMPACT_HISTORY_FLOOR: '0' })).toBe(0);
    expect(floor({ WM_COMPACT_HISTORY_FLOOR: ' 0.35 ' })).toBe(0.35);
    expect(floor({ WM_COMPACT_HISTORY_FLOOR: '.1' })).toBe(0.1);
    expect(floor({ WM_COMPACT_HISTORY_FLOOR: '0.35' }, { compactHistoryFloor: 0.1 })).toBe(0.1);
    for (const bad of ['1', '20', '-0.1', 'off', '0.2.1'])
      expect(() => floor({ WM_COMPACT_HISTORY_FLOOR: bad })).toThrow(
        new ConfigError(
          `WM_COMPACT_HISTORY_FLOOR=${JSON.stringify(bad)} is invalid: expected a share of the window from 0 to below 1 (0.2), or 0 to always compact`,
        ),
      );
    expect(() => floor({ WM_COMPACT_HISTORY_FLOOR: '0.8' })).toThrow(
      /compactHistoryFloor \(0\.8\) must be below fallbackThreshold \(0\.75\)/,
    );
  });
});
