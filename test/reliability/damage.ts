/**
 * Data said to be kept, and damage the repair must cover. Saved tool outputs and
 * arguments keep distinct names whatever ids the server gives (and never a model-chosen
 * id as a name); the system's folder detail/tool-outputs is refused to the model, and a
 * file in its way never loses a host tool's output; a model-chosen name shaped like a
 * temp file survives the next open. One damaged, missing or reordered line in the middle
 * of messages.jsonl leaves a session that a strict server (400 on unpaired tool messages)
 * still serves, repaired by appending and reported in damage.json; meta.json's id never
 * beats the directory, and an absurd calibration is rebuilt.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { scriptedModel, type ScriptedReply } from '../../src/llm/scriptedModel.js';
import { createSession, openSession, type Session } from '../../src/session/index.js';
import { startTestServer, type PolicyReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/tool.js';
import type { ToolMessage } from '../../src/history/messages.js';
import { historyProblems } from './checks.js';
import { Tally, type FamilyResult } from './report.js';

const OUTPUTS = 'working-memory/detail/tool-outputs';
const big = (mark: string) => `${mark}\n${'x'.repeat(80 * 1024)}\n${mark} end\n`;

/** A host tool printing 80 KB that names its call: over the 50 KB cap, so its full text is saved. */
const dump = defineTool({
  name: 'dump',
  description: 'Print a large report.',
  parameters: z.object({ mark: z.string() }),
  execute: ({ mark }) => big(mark),
});

function savedFiles(dir: string): string[] {
  const at = join(dir, OUTPUTS);
  return existsSync(at) ? readdirSync(at).sort() : [];
}

function toolResults(session: Session): string[] {
  return session.history.items.flatMap((i) => (i.message.role === 'tool' ? [(i.message as ToolMessage).content] : []));
}

/** A script answering each request of a turn with `calls(turn, step)`, and with a short text when there are none. */
function callsPerStep(calls: (turn: number, step: number) => ScriptedReply['toolCalls'] | null) {
  let turn = 0;
  let step = 0;
  return scriptedModel((request) => {
    if (request.messages.at(-1)!.role === 'user') [turn, step] = [turn + 1, 0];
    else step++;
    const toolCalls = calls(turn, step);
    return toolCalls?.length ? { text: 'working', toolCalls } : { text: 'done' };
  });
}

const callsThenText = (calls: (turn: number) => ScriptedReply['toolCalls']) =>
  callsPerStep((turn, step) => (step === 0 ? calls(turn) : null));

async function savedOutputCases(tally: Tally): Promise<void> {
  // A server that omits ids: every response's calls are call_0, call_1, … again.
  {
    const home = mkdtempSync(join(tmpdir(), 'workmem-damage-'));
    const keyLike = 'sk-live-0123456789abcdef0123456789';
    // Two responses per turn, each numbering its calls from call_0; one id shaped like a key.
    const llm = callsPerStep((turn, step) =>
      step > 1
        ? null
        : [
            { id: 'call_0', name: 'dump', arguments: { mark: `turn ${turn} ${step ? 'second' : 'first'}` } },
            {
              id: turn === 2 && step === 1 ? keyLike : 'call_1',
              name: 'write',
              arguments: JSON.stringify({ path: 'detail/a.md', content: 'y'.repeat(300 * 1024) }),
            },
          ],
    );
    let session = await createSession({ llm, home, cwd: '/damage', env: {}, trace: false, tools: [dump] });
    await session.prompt('one');
    await session.prompt('two');
    await session.close();
    session = await openSession(session.id, { llm, home, env: {}, trace: false, tools: [dump] });
    await session.prompt('three'); // after a restart: no name is reused
    const dir = session.dir;
    await session.close();
    const files = savedFiles(dir);
    const texts = files.map((f) => readFileSync(join(dir, OUTPUTS, f), 'utf8'));
    const marks = [1, 2, 3].flatMap((t) => [`turn ${t} first`, `turn ${t} second`]);
    const missing = marks.filter((m) => !texts.some((t) => t.startsWith(`${m}\n`)));
    const argumentFiles = files.filter((f) => f.endsWith('.arguments.json')).length;
    tally.add(
      'a server that repeats call ids (call_0, call_1 in every response): every full output kept',
      {
        survived: missing.length === 0 && argumentFiles === 6,
        lost: missing.length + (6 - Math.min(6, argumentFiles)),
        detail: `missing ${missing.join(', ') || 'none'}; ${argumentFiles} of 6 argument files; files ${files.join(', ')}`,
      },
      'named by a per-session sequence',
    );
    const named = files.filter((f) => f.includes('sk-') || f.includes('call_'));
    tally.add('a model-chosen call id (a key) as a file name', { survived: named.length === 0, detail: `names: ${named.join(', ')}` });
    rmSync(home, { recursive: true, force: true });
  }

  // The model claims the system's folder by writing a file there; a file in its way from before.
  for (const [fault, prepare] of [
    ['the model writes a file named detail/tool-outputs', null],
    ['a file named detail/tool-outputs is in the way (by hand, or an older version)', 'file'],
  ] as const) {
    const home = mkdtempSync(join(tmpdir(), 'workmem-damage-'));
    const llm = callsThenText((turn) =>
      turn === 1
        ? [
            { name: 'write', arguments: { path: 'detail/tool-outputs', content: 'mine' } },
            { name: 'write', arguments: { path: 'detail/tool-outputs/x.txt', content: 'mine' } },
          ]
        : [{ name: 'dump', arguments: { mark: 'host report' } }],
    );
    const session = await createSession({ llm, home, cwd: '/damage', env: {}, trace: false, tools: [dump] });
    if (prepare === 'file') writeFileSync(join(session.dir, OUTPUTS), 'in the way');
    const first = await session.prompt('claim it');
    const second = await session.prompt('report');
    const results = toolResults(session);
    await session.close();
    const refused = results.slice(0, 2).every((r) => /reserved|workmem's own/i.test(r));
    const shown = results.at(-1) ?? '';
    const delivered = second.status === 'done' && shown.startsWith('host report\n');
    const explained = prepare === 'file' ? /could not be saved/.test(shown) : /full output is in/.test(shown);
    tally.add(
      fault,
      {
        survived: first.status === 'done' && (prepare === 'file' || refused) && delivered && explained,
        lost: delivered ? 0 : 1,
        detail: `turns ${first.status}/${second.status}${second.error ? ` (${second.error.message})` : ''}; writes: ${results
          .slice(0, 2)
          .map((r) => r.slice(0, 100))
          .join(' | ')}; output: ${shown.slice(-200)}`,
      },
      prepare === 'file' ? 'output delivered, capped, with why it was not saved' : 'refused; output still delivered',
    );
    rmSync(home, { recursive: true, force: true });
  }

  // A model-chosen name shaped like one of our temporary files.
  {
    const home = mkdtempSync(join(tmpdir(), 'workmem-damage-'));
    const names = ['detail/.notes.1.deadbeef.tmp', 'archive/.overview.md.42.0badf00d.tmp'];
    const llm = callsThenText(() => names.map((path) => ({ name: 'write', arguments: { path, content: `kept ${path}` } })));
    let session = await createSession({ llm, home, cwd: '/damage', env: {}, trace: false });
    await session.prompt('write them');
    await session.close();
    session = await openSession(session.id, { llm, home, env: {}, trace: false });
    const kept = names.filter((n) => existsSync(join(session.dir, 'working-memory', n)));
    await session.close();
    tally.add(
      'a model-written file named like a temp file (detail/.notes.1.deadbeef.tmp), then reopen',
      { survived: kept.length === names.length, lost: names.length - kept.length, detail: `kept ${kept.join(', ') || 'none'}` },
      'temp files live in the session’s .tmp/',
    );
    rmSync(home, { recursive: true, force: true });
  }
}

interface LogLine {
  type: string;
  seq: number;
  message?: { role: string; tool_calls?: unknown[] };
}

async function logRepairCases(tally: Tally): Promise<void> {
  const server = await startTestServer({
    strict: true,
    policy: (request): PolicyReply => {
      const last = request.messages.at(-1)!;
      if (last.role === 'tool') return { content: 'noted' };
      return { content: 'writing', toolCalls: [{ name: 'write', arguments: JSON.stringify({ path: 'detail/n.md', content: 'n' }) }] };
    },
  });
  const llm = () => openaiChat({ baseURL: server.baseURL, apiKey: 'k', model: 'gpt-4o', env: {}, maxRetries: 0 });
  const damages: [string, (lines: string[]) => string[]][] = [
    [
      'a tool result line damaged in the middle of messages.jsonl',
      (lines) => lines.map((l, i) => (i === resultAt(lines, 1) ? '{"seq": 1' : l)),
    ],
    [
      'a tool call line damaged in the middle (its result an orphan)',
      (lines) => lines.map((l, i) => (i === callAt(lines, 1) ? 'garbage' : l)),
    ],
    [
      'a tool call and its result reordered in the middle',
      (lines) => {
        const c = callAt(lines, 1);
        const r = resultAt(lines, 1);
        const out = lines.slice();
        [out[c], out[r]] = [out[r]!, out[c]!];
        return out;
      },
    ],
    ['a tool result line missing in the middle', (lines) => lines.filter((_, i) => i !== resultAt(lines, 0))],
  ];
  try {
    for (const [fault, damage] of damages) {
      const home = mkdtempSync(join(tmpdir(), 'workmem-damage-'));
      try {
        let session = await createSession({ llm: llm(), home, cwd: '/damage', env: {}, trace: false });
        for (const text of ['one', 'two', 'three']) await session.prompt(text);
        await session.close();
        const logPath = join(session.dir, 'messages.jsonl');
        const damaged = `${damage(readFileSync(logPath, 'utf8').trimEnd().split('\n')).join('\n')}\n`;
        writeFileSync(logPath, damaged);
        session = await openSession(session.id, { llm: llm(), home, env: {}, trace: false });
        const result = await session.prompt('after the damage');
        const problems = historyProblems(session.history);
        await session.close();
        const kept = readFileSync(logPath, 'utf8').startsWith(damaged);
        const report = existsSync(join(session.dir, 'damage.json')) ? readFileSync(join(session.dir, 'damage.json'), 'utf8') : '';
        const reported = /"repairs"/.test(report) && /interrupted|set aside|moved after its call/.test(report);
        tally.add(
          fault,
          {
            survived: result.status === 'done' && problems.length === 0 && kept && reported,
            lost: kept ? 0 : 1,
            detail: `turn ${result.status}${result.error ? ` (${result.error.message.slice(0, 200)})` : ''}; ${problems.join('; ')}; log ${kept ? 'appended to' : 'rewritten'}; damage.json ${reported ? 'reports it' : `says ${report.slice(0, 200) || 'nothing'}`}`,
          },
          'answered "interrupted" or set aside, by appending; in damage.json',
        );
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }
  } finally {
    await server.close();
  }
}

/** Index of the log line holding the nth (0-based) assistant message with tool calls. */
function callAt(lines: string[], nth: number): number {
  return lines.map((l) => JSON.parse(l) as LogLine).flatMap((e, i) => (e.message?.tool_calls?.length ? [i] : []))[nth]!;
}

function resultAt(lines: string[], nth: number): number {
  return lines.map((l) => JSON.parse(l) as LogLine).flatMap((e, i) => (e.message?.role === 'tool' ? [i] : []))[nth]!;
}

async function metaCases(tally: Tally): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-damage-'));
  const llm = scriptedModel(() => ({ text: 'ok', usage: { promptTokens: 900, completionTokens: 2 } }));
  try {
    const a = await createSession({ llm, home, cwd: '/damage', env: {}, trace: false, name: 'A' });
    await a.prompt('I am A');
    await a.close();
    const b = await createSession({ llm, home, cwd: '/damage', env: {}, trace: false, name: 'B' });
    await b.prompt('I am B');
    await b.close();

    // meta.json of A names B.
    const metaPath = join(a.dir, 'meta.json');
    writeFileSync(metaPath, JSON.stringify({ ...JSON.parse(readFileSync(metaPath, 'utf8')), id: b.id }));
    const opened = await openSession(a.id, { llm, home, env: {}, trace: false });
    const result = await opened.prompt('who am I');
    const asA = opened.id === a.id && JSON.parse(readFileSync(metaPath, 'utf8')).id === a.id;
    const said = opened.damage.join('; ');
    await opened.close();
    tally.add(
      "meta.json names another session's id",
      {
        survived: asA && result.status === 'done' && /meta\.json/.test(said),
        detail: `ran as ${opened.id} (A is ${a.id}); damage: ${said}`,
      },
      'the directory is the identity; reported',
    );

    // An absurd calibration.
    for (const value of [1e12, -1e12]) {
      writeFileSync(metaPath, JSON.stringify({ ...JSON.parse(readFileSync(metaPath, 'utf8')), calibration: value }));
      const s = await openSession(a.id, { llm, home, env: {}, trace: false });
      const r = await s.prompt('still there?');
      const healed = Math.abs(JSON.parse(readFileSync(metaPath, 'utf8')).calibration) < 1e6;
      const note = s.damage.join('; ');
      await s.close();
      tally.add(
        `meta.json calibration ${value}`,
        {
          survived: r.status === 'done' && healed && /calibration/.test(note),
          detail: `turn ${r.status}${r.error ? ` (${r.error.message.slice(0, 150)})` : ''}; damage: ${note}`,
        },
        'rebuilt from the log; reported',
      );
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export async function damageCases(): Promise<FamilyResult> {
  const tally = new Tally('damage');
  await savedOutputCases(tally);
  await logRepairCases(tally);
  await metaCases(tally);
  return tally.result();
}
