/**
 * The conversation the pin tests of each door play (test/aiSdk/aiSdkPins.test.ts,
 * test/langchain/langchainPins.test.ts): rules pinned at creation, a task statement pinned
 * as it is sent, then enough facts in a small window to compact and reach phase 2.
 */
import { expect } from 'vitest';
import type { WorkmemEvent } from '../../src/events.js';
import { protocolFollower, type TestServer } from '../../src/testing/index.js';
import { ofType, testServers } from '../helpers.js';

export const WINDOW = 5000;
export const settings = { contextWindow: WINDOW, reserveOutputTokens: 500 };
export const now = (): number => Date.UTC(2026, 10, 25, 12);
export const RULES = 'Rules: metric units only; never recommend pesticides.';
export const TASK = 'Task: keep track of my plants and answer questions about them.';

export function prompts(): string[] {
  const out = [TASK];
  for (let i = 1; i <= 8; i++) out.push(`My plant${i} is rose${i}. ${'It likes the sun and a little shade, '.repeat(16)}`);
  for (let i = 1; i <= 3; i++) out.push(`What is my plant${i}?`);
  return out;
}

/**
 * Test servers whose model leaves compaction to the system: a step that calls write and
 * compact_history together is recorded by a host loop's tools passes one call at a time, a
 * difference of its own (the compaction does not see the write's result yet), not one of pinning.
 */
export function pinServers(): () => Promise<TestServer> {
  const serve = testServers();
  return () => serve(protocolFollower({ seed: 2, compacts: false }), { promptCaching: 'off' });
}

/**
 * What pinning guarantees, as the server saw it: the session holds the two pins; every
 * request carries the rules once and the task; the conversation was compacted and reached
 * phase 2 past its first turns; and its last request sends the pins right after the system message.
 */
export function expectPinsHeld(
  sent: readonly (readonly { content: string | null }[])[],
  pinnedItems: readonly (string | null)[],
  events: WorkmemEvent[],
): void {
  expect(pinnedItems).toEqual([RULES, TASK]);
  for (const [i, request] of sent.entries()) {
    expect(
      request.filter((m) => m.content === RULES),
      `request ${i + 1}`,
    ).toHaveLength(1);
    expect(
      request.some((m) => m.content?.startsWith(TASK)),
      `request ${i + 1}`,
    ).toBe(true);
  }
  const figures = `${ofType(events, 'compaction_end').length} compactions, modes ${[...new Set(ofType(events, 'prompt_built').map((e) => e.mode))].join(', ')}`;
  expect(
    ofType(events, 'compaction_end').some((e) => e.replaced > 0),
    figures,
  ).toBe(true);
  expect(
    ofType(events, 'prompt_built').some((e) => e.mode === 'phase2' && e.range[0] > 2),
    figures,
  ).toBe(true);
  expect(
    sent
      .at(-1)!
      .slice(1, 3)
      .map((m) => m.content),
  ).toEqual([RULES, TASK]);
}
