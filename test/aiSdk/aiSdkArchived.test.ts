/**
 * A loop that holds its own messages drops what workmem archived (workmem.archived), as the
 * LangChain middleware drops it from the agent's state: what remains is matched as the end of
 * the session's conversation, no branch taken, and the log keeps every message.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, wrapLanguageModel, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { createWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { scripted } from '../../src/testing/index.js';
import { collect, ofType, tempHome, testServers } from '../helpers.js';

const serve = testServers();

describe('workmem.archived', () => {
  it('names the messages a compaction archived; the loop drops them and goes on, nothing lost', async () => {
    // Past 75 % of the window from the first call: the second archives the first turn.
    const long = `${'Background material, line by line. '.repeat(215)}`;
    const server = await serve(
      scripted([{ content: 'Noted.' }, { content: 'Summary of the turn.' }, { content: 'Done.' }, { content: 'Still here.' }]),
    );
    const model = createOpenAICompatible({ name: 'test', baseURL: server.baseURL, includeUsage: true }).chatModel('gpt-4o');
    // The fallback's own summary, in the script's order (no summary prepared in the background).
    const settings = { reserveOutputTokens: 200, backgroundThreshold: false as const };
    const workmem = await createWorkmem({ model, contextWindow: 3000, settings, home: tempHome(), cwd: '/work/project', env: {} });
    const events = collect(workmem.session);
    const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
    let messages: ModelMessage[] = [];
    const ask = async (text: string) => {
      messages.push({ role: 'user', content: text });
      messages.push(...(await generateText({ model: wrapped, messages })).response.messages);
    };
    await ask(long);
    expect(workmem.archived(messages)).toEqual([]);
    await ask('And now?');
    expect(ofType(events, 'compaction_end').filter((e) => e.replaced > 0)).toHaveLength(1);
    const archived = workmem.archived(messages);
    expect(archived).toEqual([0, 1]);
    messages = messages.filter((_, i) => !archived.includes(i));
    await ask('And then?');
    const texts = (m: ModelMessage) =>
      typeof m.content === 'string' ? m.content : m.content.map((p) => ('text' in p ? p.text : '')).join('');
    expect(messages.map(texts)).toEqual(['And now?', 'Done.', 'And then?', 'Still here.']);
    const log = (await workmem.session.record.storage.log.read()).entries;
    expect(log.some((e) => e.type === 'branch')).toBe(false);
    expect(log.flatMap((e) => (e.type === 'message' ? [e.message.content] : []))).toEqual([
      long,
      'Noted.',
      'And now?',
      'Done.',
      'And then?',
      'Still here.',
    ]);
    await workmem.close();
  });
});
