import { describe, expect, it } from 'vitest';
import { SEED_LAYOUT } from '../../src/eval/arms.js';
import type { SettingsOverrides } from '../../src/settings/config.js';
import type { LLMRequest } from '../../src/llm/llm.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { openSession, type Session } from '../../src/session/index.js';
import { collect, newSession, ofType } from '../helpers.js';
import { storesUnderTest, type Where } from '../storage/stores.js';

const CLOCK = () => 1_800_000_000_000;

function longText(turn: number): string {
  return `Answer ${turn}: ` + Array.from({ length: 60 }, (_, i) => `point ${turn}.${i}`).join(', ') + '.';
}

/**
 * Runs `prompts` through a session, restarting it (close + openSession) before the
 * prompts listed in `restartBefore`. Returns every request the model received.
 */
async function run(
  replies: ScriptedReply[],
  prompts: string[],
  settings: SettingsOverrides,
  restartBefore: number[],
  where: Where,
  /** Where the k-th restart opens the session: by default where it was made. */
  reopenAt: (k: number) => Where = () => where,
): Promise<{ requests: LLMRequest[]; events: ReturnType<typeof collect> }> {
  const requests: LLMRequest[] = [];
  let next = 0;
  const model = () => {
    const llm = scriptedModel(() => replies[next++] ?? { text: 'out of script' });
    const complete = llm.complete.bind(llm);
    return {
      ...llm,
      complete: (request: LLMRequest, options: Parameters<typeof complete>[1]) => (
        requests.push(structuredClone(request)),
        complete(request, options)
      ),
    };
  };
  const options = { settings, now: CLOCK, env: {}, ...where };
  let session: Session = await newSession({ llm: model(), ...options });
  const events = collect(session);
  for (const [i, prompt] of prompts.entries()) {
    if (restartBefore.includes(i)) {
      await session.close();
      session = await openSession(session.id, { llm: model(), ...options, ...reopenAt(restartBefore.indexOf(i)) });
      session.on('*', (e) => events.push(e));
    }
    const result = await session.prompt(prompt);
    expect(result.status).toBe('done');
  }
  await session.close();
  return { requests, events };
}

/** Twelve turns: phase 1 until turn 8, then phase 2; a 2500-token window forces compactions early on. */
function scenario(): { replies: ScriptedReply[]; prompts: string[]; settings: SettingsOverrides } {
  const write = (content: string): ScriptedReply => ({
    toolCalls: [{ id: 'call_write', name: 'write', arguments: { path: 'working-memory/overview.md', content } }],
  });
  const replies: ScriptedReply[] = [];
  const prompts: string[] = [];
  for (let turn = 1; turn <= 12; turn++) {
    prompts.push(`Question ${turn}: tell me about topic ${turn}.`);
    if (turn === 8) replies.push(write(`# Working Memory\n\n## Known facts\n- Topics 1 to 8 were covered; the user likes detail.\n`));
    replies.push({ text: longText(turn) });
  }
  return { replies, prompts, settings: { contextWindow: 2500, reserveOutputTokens: 200 } };
}

describe.each(storesUnderTest('resume'))('resume ($name store)', (store) => {
  it('after a restart, openSession builds byte-identical prompts: phase switch, compaction and reminders included', async () => {
    const { replies, prompts, settings } = scenario();
    const straight = await run(replies, prompts, settings, [], store.fresh());
    const restarted = await run(replies, prompts, settings, [3, 6, 9], store.fresh());

    expect(ofType(straight.events, 'compaction_end').length).toBeGreaterThan(0);
    expect(ofType(straight.events, 'reminder').length).toBeGreaterThan(0);
    expect(ofType(straight.events, 'mode_changed').map((e) => e.to)).toEqual(['phase2']);
    expect(restarted.requests).toHaveLength(straight.requests.length);
    for (const [i, request] of straight.requests.entries()) {
      expect(JSON.stringify(restarted.requests[i]), `request ${i + 1}`).toBe(JSON.stringify(request));
    }
  });

  it("with memoryPosition 'after-history' too: the memory before the last message, byte-identical after restarts", async () => {
    const { replies, prompts, settings } = scenario();
    const after = { ...settings, memoryPosition: 'after-history' as const };
    const straight = await run(replies, prompts, after, [], store.fresh());
    const restarted = await run(replies, prompts, after, [3, 6, 9], store.fresh());
    expect(ofType(straight.events, 'compaction_end').length).toBeGreaterThan(0);
    expect(ofType(straight.events, 'mode_changed').map((e) => e.to)).toEqual(['phase2']);
    for (const request of straight.requests) {
      expect(request.messages[0]!.content).not.toContain('<working_memory file=');
      expect(request.messages.at(-1)!.content!.startsWith('<working_memory file=')).toBe(true);
    }
    expect(restarted.requests).toHaveLength(straight.requests.length);
    for (const [i, request] of straight.requests.entries()) {
      expect(JSON.stringify(restarted.requests[i]), `request ${i + 1}`).toBe(JSON.stringify(request));
    }
  });

  it("round 3 new user: with recentTurnsStep, phase 2's held window carries on across restarts (run -c), byte-identical to an uninterrupted session", async () => {
    const replies: ScriptedReply[] = [
      {
        toolCalls: [
          {
            name: 'write',
            arguments: { path: 'overview.md', content: '# Working Memory\n\n## Known facts\n- The user asks about topics in order.\n' },
          },
        ],
      },
    ];
    const prompts: string[] = [];
    for (let turn = 1; turn <= 12; turn++) {
      prompts.push(`Question ${turn}: tell me about topic ${turn}.`);
      replies.push({ text: `Topic ${turn} is about point ${turn}.` });
    }
    const settings = { recentTurns: 1, recentTurnsStep: 4 };
    const straight = await run(replies, prompts, settings, [], store.fresh());
    const moving = await run(replies, prompts, { recentTurns: 1 }, [], store.fresh());
    // Every turn in a process of its own, as `workmem run -c` does.
    const restarted = await run(replies, prompts, settings, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], store.fresh());
    expect(ofType(straight.events, 'mode_changed').map((e) => e.to)).toEqual(['phase2']);
    // The window did hold: phase 2 requests carry more than the one recent turn a moving window would.
    const sizes = (requests: LLMRequest[]) => requests.map((r) => r.messages.length);
    expect(sizes(straight.requests)).not.toEqual(sizes(moving.requests));
    expect(restarted.requests).toHaveLength(straight.requests.length);
    for (const [i, request] of straight.requests.entries()) {
      expect(JSON.stringify(restarted.requests[i]), `request ${i + 1}`).toBe(JSON.stringify(request));
    }
  });

  // On Postgres the reminder tracker is in the database (its state table), so the instance
  // that resumes finds the reminder due after a compaction (request 4) as the first left it.
  // The seed's layout, and the default's held window: a resumed session weighs the window by
  // the base it is about to send, as an uninterrupted one does (it has no earlier base).
  it.each([
    ['the default layout', {}],
    ["the seed's layout", SEED_LAYOUT],
  ])('resumed by another instance (the same store, a home of its own), it builds byte-identical prompts too: %s', async (_, layout) => {
    const { replies, prompts, settings: scenarioSettings } = scenario();
    const settings = { ...scenarioSettings, ...layout };
    const where = store.fresh();
    const other = store.elsewhere(where);
    const straight = await run(replies, prompts, settings, [], store.fresh());
    // Every turn from the third on in the other instance than the one before.
    const moved = await run(replies, prompts, settings, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11], where, (k) => (k % 2 === 0 ? other : where));
    expect(ofType(straight.events, 'reminder').length).toBeGreaterThan(0);
    expect(moved.requests).toHaveLength(straight.requests.length);
    for (const [i, request] of straight.requests.entries()) {
      expect(JSON.stringify(moved.requests[i]), `request ${i + 1}`).toBe(JSON.stringify(request));
    }
  });

  it('a resumed session carries the whole derived history, token counts read from the log', async () => {
    const where = store.fresh();
    const first = await newSession({ llm: scriptedModel(() => ({ text: 'fine' })), ...where });
    for (let i = 0; i < 5; i++) await first.prompt(`message ${i}`);
    const before = first.history;
    await first.close();
    const second = await openSession(first.id, { llm: scriptedModel([{ text: 'x' }]), ...where, env: {} });
    expect(second.history.length).toBe(before.length);
    expect(second.history.items.slice(0, second.history.length)).toEqual(before.items.slice(0, before.length));
    expect(second.history.cum.slice(0, second.history.length + 1)).toEqual(before.cum.slice(0, before.length + 1));
    // Prefix ids work for opening too.
    await second.close();
    const third = await openSession(first.id.slice(0, 8), { llm: scriptedModel([]), ...where, env: {} });
    expect(third.id).toBe(first.id);
    await third.close();
  });
});
