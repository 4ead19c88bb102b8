/**
 * Malformed streams. The test server corrupts the SSE stream of each response from a
 * seed (bytes flipped, spans dropped or repeated, garbage and stray events inserted,
 * invalid UTF-8, the stream cut short or the socket reset), and the real openai client
 * reads it, with retries off so that every corruption reaches the session. Each run
 * survives when the turn either completes or fails with a clear error, nothing goes
 * unhandled, and the history stays a valid message list; at the end a clean turn works
 * and the reopened session is undamaged.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLog } from '../../src/storage/messageLog.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { createSession, openSession, type TurnResult } from '../../src/session/index.js';
import { startTestServer } from '../../src/testing/index.js';
import { historyProblems } from './checks.js';
import { Tally, type FamilyResult } from './report.js';

/** A clear error: says something, in a sentence, without an object dump or a stack. */
function unclear(result: TurnResult): string | null {
  if (result.status === 'done') return null;
  const message = result.error?.message ?? '';
  if (result.status !== 'failed') return `the turn ended ${result.status}`;
  if (message.length < 10) return `the error says too little: ${JSON.stringify(message)}`;
  if (/\[object Object\]|\bundefined\b|\n\s+at /.test(message)) return `the error is not clear: ${message.slice(0, 200)}`;
  return null;
}

export async function streamCases(runs: number, firstSeed = 1): Promise<FamilyResult> {
  const tally = new Tally('malformed streams');
  let unhandled = 0;
  const onUnhandled = (): void => void unhandled++;
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
  const server = await startTestServer({
    policy: (request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'user' && typeof last.content === 'string' && last.content.startsWith('use a tool'))
        return {
          content: 'Saving a note.',
          toolCalls: [{ name: 'write', arguments: JSON.stringify({ path: 'detail/note.md', content: `# Note\n${'a note '.repeat(40)}` }) }],
        };
      return { content: 'Here is an answer with several words in it, long enough to span many chunks. '.repeat(3) };
    },
  });
  const home = mkdtempSync(join(tmpdir(), 'workmem-streams-'));
  const llm = () => openaiChat({ baseURL: server.baseURL, apiKey: 'sk-fuzz-0123456789abcdef', model: 'gpt-4o', env: {} });
  const settings = { retry: { maxRetries: 0 } };
  const session = await createSession({ llm: llm(), home, cwd: '/fuzz', env: {}, settings, trace: false });
  const outcomes = new Map<string, number>();
  try {
    for (let i = 0; i < runs; i++) {
      const seed = firstSeed + i;
      const before = unhandled;
      server.inject({ type: 'corrupt', seed });
      const tool = i % 3 === 0;
      const result = await session.prompt(tool ? `use a tool, run ${i}` : `question ${i}`);
      const problems: string[] = [];
      const why = unclear(result);
      if (why) problems.push(why);
      if (unhandled > before) problems.push('an unhandled rejection or exception');
      problems.push(...historyProblems(session.history));
      const fault = tool ? 'corrupted stream, turn with a tool call' : 'corrupted stream, answer only';
      tally.add(
        fault,
        { survived: problems.length === 0, detail: `seed ${seed}: ${problems.join('; ')}` },
        'completes or fails with a clear error',
      );
      const said = result.error?.message.replace(/\d+/g, 'N') ?? '';
      const key = result.status === 'done' ? 'completed' : `failed: ${said.length > 80 ? `${said.slice(0, 80)}…` : said}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    const final = await session.prompt('a clean question at the end');
    tally.add('a clean turn after the fuzzing', {
      survived: final.status === 'done',
      detail: `ended ${final.status}: ${final.error?.message}`,
    });
  } finally {
    await session.close();
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
  }
  const reopened = await openSession(session.id, { llm: llm(), home, env: {}, settings, trace: false });
  const damage = [...reopened.damage, ...readLog(join(reopened.dir, 'messages.jsonl')).damage];
  const problems = [...damage, ...historyProblems(reopened.history)];
  await reopened.close();
  await server.close();
  rmSync(home, { recursive: true, force: true });
  tally.add(
    'the log reopened after the fuzzing',
    { survived: problems.length === 0, detail: problems.join('; ') },
    'no damage, a valid history',
  );
  const top = [...outcomes].sort((a, b) => b[1] - a[1]).slice(0, 6);
  return tally.result([`malformed streams: ${runs} runs; outcomes: ${top.map(([k, n]) => `${n} × ${k}`).join('; ')}`]);
}
