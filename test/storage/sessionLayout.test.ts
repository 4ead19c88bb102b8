import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryHealth, overviewTemplate } from '../../src/memory/memoryTemplate.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { listSessions } from '../../src/session/index.js';
import { encodeCwd } from '../../src/storage/sessionPaths.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { logEntries, newSession, tempHome } from '../helpers.js';

describe('session layout (docs/design.md §3)', () => {
  it('encodes the working directory as --<cwd>--', () => {
    expect(encodeCwd('/Users/a/proj')).toBe('--Users-a-proj--');
    expect(encodeCwd('/work/my project/x')).toBe('--work-my project-x--');
    expect(encodeCwd('C:\\Users\\a')).toBe('--C--Users-a--');
    expect(encodeCwd('/')).toBe('----');
  });

  it('creates <home>/sessions/--<cwd>--/<id>/ with the log, meta.json and working-memory/, private to the user', async () => {
    const home = tempHome();
    const session = await newSession({ llm: scriptedModel([{ text: 'hi' }]), home, cwd: '/Users/a/proj', name: 'demo' });
    await session.prompt('Hello there, this is the first message of the session.');
    expect(session.dir).toBe(join(home, 'sessions', '--Users-a-proj--', session.id));
    // .tmp/: the temporary files of atomic writes, where no name is the model's.
    expect(readdirSync(session.dir).sort()).toEqual([
      '.tmp',
      'messages.jsonl',
      'meta.json',
      'session.lock',
      'trace.jsonl',
      'working-memory',
    ]);
    expect(readdirSync(join(session.dir, 'working-memory')).sort()).toEqual(['archive', 'detail', 'overview.md']);
    expect(statSync(session.dir).mode & 0o777).toBe(0o700);
    for (const file of ['messages.jsonl', 'meta.json', 'session.lock', 'trace.jsonl', 'working-memory/overview.md']) {
      expect(statSync(join(session.dir, file)).mode & 0o777, file).toBe(0o600);
    }
    const meta = JSON.parse(readFileSync(join(session.dir, 'meta.json'), 'utf8'));
    expect(meta).toMatchObject({
      id: session.id,
      name: 'demo',
      title: 'Hello there, this is the first message of the session.',
      cwd: '/Users/a/proj',
      messageCount: 2,
      turns: 1,
      historyMode: 'phase1',
      memoryWrites: 0,
    });
    expect(meta.updatedAt).toBeGreaterThanOrEqual(meta.createdAt);
    expect(await listSessions({ home, cwd: '/Users/a/proj' })).toEqual([
      expect.objectContaining({ id: session.id, dir: session.dir, name: 'demo' }),
    ]);
    expect(await listSessions({ home, cwd: '/elsewhere' })).toEqual([]);
    await session.close();
    // The lock that says who has the session open goes with the close.
    expect(readdirSync(session.dir)).not.toContain('session.lock');
  });

  it('every log line carries its token count, counted once when it was added', async () => {
    const session = await newSession({ llm: scriptedModel([{ text: '回答：好的。' }, { text: 'Second.' }]) });
    await session.prompt('第一个问题：今天天气怎么样？');
    await session.prompt('Second question, in English.');
    const counter = await loadTokenCounter('gpt-4o');
    const messages = logEntries(session.dir).filter((e) => e.type === 'message');
    expect(messages).toHaveLength(4);
    for (const entry of messages) if (entry.type === 'message') expect(entry.tokens).toBe(counter.message(entry.message));
    expect(new Set(messages.map((m) => m.seq)).size).toBe(4);
    await session.close();
  });

  it('new sessions get the five-section template with guidance, in English or in Chinese', async () => {
    const en = overviewTemplate('en');
    for (const section of ['## Current task', '## Key decisions', '## Known facts', '## Open questions', '## Recent actions'])
      expect(en).toContain(section);
    const zh = overviewTemplate('zh');
    for (const section of ['## 当前任务', '## 关键决策', '## 已知信息', '## 待解决', '## 最近操作']) expect(zh).toContain(section);
    for (const t of [en, zh]) {
      expect(t).toMatch(/<!--[\s\S]+working-memory\/overview\.md[\s\S]+-->/);
      expect(memoryHealth(t)).toEqual({ differsFromTemplate: false, contentChars: 0 });
    }
    const session = await newSession({ llm: scriptedModel([]), settings: { language: 'zh' } });
    expect(session.memory()).toBe(zh);
    await session.close();
    expect(memoryHealth(`${en}\n- The user is Ada.`)).toEqual({ differsFromTemplate: true, contentChars: 'TheuserisAda.'.length + 1 });
  });
});

describe('abort', () => {
  it('mid-stream keeps the text streamed so far, marked aborted, and drops queued prompts', async () => {
    const llm = scriptedModel([{ text: 'one two three four five six seven eight', chunks: 8, delayMs: 20 }, { text: 'resumed' }]);
    const session = await newSession({ llm });
    const deltas: string[] = [];
    session.on('message_delta', (e) => {
      deltas.push(e.delta);
      if (deltas.length === 3) session.abort();
    });
    const first = session.prompt('Count slowly.');
    const queued = session.prompt('This one was queued.');
    expect(await first).toMatchObject({ status: 'aborted' });
    expect(await queued).toMatchObject({ status: 'aborted', turn: null });
    const last = logEntries(session.dir).at(-1)!;
    expect(last).toMatchObject({ type: 'message', stop: 'aborted', message: { role: 'assistant', content: deltas.join('') } });
    expect(llm.requests).toHaveLength(1);
    // The session goes on; the partial answer is part of the history it sends.
    const partial = deltas.join('');
    expect(partial.length).toBeGreaterThan(0);
    expect(await session.prompt('Go on.')).toMatchObject({ status: 'done', text: 'resumed' });
    expect(llm.requests[1]!.messages.map((m) => m.content?.split('\n\n<context_meta>')[0])).toContain(partial);
    await session.close();
  });

  it('mid-tool gives every pending call a result, so the history stays valid', async () => {
    const { z } = await import('zod');
    const { defineTool } = await import('../../src/tools/tool.js');
    let release: () => void = () => {};
    const slow = defineTool({
      name: 'slow',
      description: 'Takes a while',
      parameters: z.object({}),
      execute: ({}, { signal }) =>
        new Promise<string>((resolve) => {
          release = () => resolve('finished');
          signal.addEventListener('abort', () => resolve('late'));
        }),
    });
    const llm = scriptedModel([
      {
        toolCalls: [
          { name: 'slow', arguments: {} },
          { name: 'slow', arguments: {} },
        ],
      },
      { text: 'ok' },
      { text: 'after abort' },
    ]);
    const session = await newSession({ llm, tools: [slow] });
    session.on('tool_start', () => queueMicrotask(() => session.abort()));
    const result = await session.prompt('Run the slow tools.');
    release();
    expect(result.status).toBe('aborted');
    const tools = logEntries(session.dir).flatMap((e) => (e.type === 'message' && e.message.role === 'tool' ? [e.message] : []));
    expect(tools.map((t) => t.tool_call_id)).toEqual(['call_0_0', 'call_0_1']);
    expect(tools.every((t) => t.content.startsWith('Aborted'))).toBe(true);
    // The next turn's request is a valid message list: each call followed by its result.
    await session.prompt('Carry on.');
    const roles = llm.requests.at(-1)!.messages.map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user']);
    await session.close();
  });
});
