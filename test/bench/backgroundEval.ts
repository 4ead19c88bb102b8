/**
 * Background compaction against today's, per behaviour profile (issue 41): `workmem eval`'s
 * workmem arms played on each profile's test server twice, with summaries prepared in the
 * background (the default) and without (the model refuses background summaries at once: the
 * fallback summarises when it compacts, as before, and nothing else changes). Accuracy and
 * input tokens side by side, from the eval's own figures; the refused requests cost nothing.
 */
import type { LLM } from '../../src/llm/llm.js';
import { LLMError } from '../../src/llm/llm.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { runEval, type ArmName, type SuiteName } from '../../src/eval/index.js';
import { BEHAVIOUR_PROFILES, behaviourProfile, startTestServer, type BehaviourProfile, type TestServer } from '../../src/testing/index.js';
import type { Row } from './harness.js';

/** The model with its background summaries refused: the session prepares nothing ahead (it tries again later, and is refused again). */
function withoutBackground(llm: LLM): LLM {
  return {
    model: llm.model,
    contextWindow: llm.contextWindow,
    maxOutputTokens: llm.maxOutputTokens,
    complete: llm.complete.bind(llm),
    summarize: (request, options) =>
      options.background ? Promise.reject(new LLMError('bad_request', 'no background summaries here')) : llm.summarize!(request, options),
  };
}

interface Figures {
  accuracy: number;
  input: number;
  output: number;
  compactions: Record<string, number>;
}

async function play(
  profile: BehaviourProfile,
  background: boolean,
  suite: SuiteName,
  arms: readonly ArmName[],
): Promise<Map<ArmName, Figures>> {
  const servers: TestServer[] = [];
  const llm = async (): Promise<LLM> => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
    const server = await startTestServer({ policy: behaviourProfile(profile) });
    servers.push(server);
    const model = openaiChat({
      baseURL: server.baseURL,
      apiKey: 'testing',
      model: `testing:${profile}`,
      contextWindow: 1_000_000,
      env: {},
    });
    return background ? model : withoutBackground(model);
  };
  try {
    const result = await runEval({ llm, model: `testing:${profile}`, suite, arms });
    return new Map(
      result.summary.map((s) => [
        s.arm,
        {
          accuracy: s.accuracy.right / Math.max(1, s.accuracy.asked),
          // The refused background requests are in the eval's failed requests, with no tokens.
          input: s.input,
          output: s.output,
          compactions: s.compactions,
        },
      ]),
    );
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
}

export async function backgroundEval(
  suite: SuiteName = 'small',
  profiles: readonly BehaviourProfile[] = BEHAVIOUR_PROFILES,
  arms: readonly ArmName[] = ['workmem-auto', 'workmem-cache-aware'],
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const profile of profiles) {
    const before = await play(profile, false, suite, arms);
    const after = await play(profile, true, suite, arms);
    for (const arm of arms) {
      const b = before.get(arm)!;
      const a = after.get(arm)!;
      const tokens = a.input / b.input;
      const compactions = (c: Record<string, number>): string =>
        Object.entries(c)
          .map(([reason, n]) => `${reason} ${n}`)
          .join(', ') || 'none';
      rows.push({
        metric: `workmem eval, ${suite} suite: input tokens, background against before`,
        case: `testing:${profile}, ${arm}`,
        median: tokens,
        p99: null,
        unit: '×',
        target: '0.95–1.05, accuracy ±5 points',
        met: tokens >= 0.95 && tokens <= 1.05 && Math.abs(a.accuracy - b.accuracy) <= 0.05,
        note: `(accuracy ${(b.accuracy * 100).toFixed(1)} % → ${(a.accuracy * 100).toFixed(1)} %; input ${b.input.toLocaleString('en-US')} → ${a.input.toLocaleString('en-US')}, output ${b.output.toLocaleString('en-US')} → ${a.output.toLocaleString('en-US')}; compactions ${compactions(b.compactions)} → ${compactions(a.compactions)})`,
      });
    }
  }
  return rows;
}
