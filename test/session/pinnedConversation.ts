/**
 * The conversation the pin tests of each door play (test/aiSdk/aiSdkPins.test.ts,
 * test/langchain/langchainPins.test.ts): rules pinned at creation, a task statement pinned
 * as it is sent, then enough facts in a small window to compact and reach phase 2.
 */
import { protocolFollower, type TestServer } from '../../src/testing/index.js';
import { testServers } from '../helpers.js';

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
