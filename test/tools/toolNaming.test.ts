/**
 * workmem's tools beside a host's that take their names (docs/proxy.md, "Tools"): no name is
 * refused. Through a Session, the AI SDK middleware and the LangChain middleware, a host tool
 * named `read` stays the host's, workmem's tools are sent as `workmem_read`, `workmem_write`,
 * … (the prompt and the reminder name them so), the model writes its memory with them, and
 * the host's `read` is capped at capture whatever its name. Without a clash nothing changes.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel, type ModelMessage } from 'ai';
import { createAgent, tool as langchainTool } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createWorkmem as aiSdkWorkmem } from '../../src/aiSdk/workmemMiddleware.js';
import { createWorkmem as langchainWorkmem } from '../../src/langchain/workmemMiddleware.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { systemPrompt } from '../../src/prompt/systemPrompt.js';
import { reminderText } from '../../src/prompt/requestTail.js';
import type { Session } from '../../src/session/index.js';
import { protocolFollower, type TestServer } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/tool.js';
import { ownToolPrefix } from '../../src/tools/toolNaming.js';
import { collect, logEntries, newSession, ofType, tempHome, testServers } from '../helpers.js';

const serve = testServers();
const OWN = ['read', 'write', 'edit', 'compact_history'];
/** A host's read: 2 MB of a file, whatever workmem's cap. */
const BIG = `${'a line of the project file\n'.repeat(80_000)}`;
const PROMPTS = ['My plant1 is rose1.', 'Use the read tool with notes.txt.', 'What is my plant1?'];
const sentNames = (server: TestServer): string[][] => server.requests.map((r) => (r.body.tools ?? []).map((t) => t.function.name));

/** What the log holds: the host's read capped, the memory written by workmem_write. */
function expectCappedAndWritten(session: Session, entries = logEntries(session.dir)): void {
  const messages = entries.flatMap((e) => (e.type === 'message' ? [e.message] : []));
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
  expect(calls.map((c) => c.function.name)).toEqual(expect.arrayContaining(['workmem_write', 'read']));
  const readCall = calls.find((c) => c.function.name === 'read')!;
  const result = messages.find((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool' && m.tool_call_id === readCall.id)!;
  expect(result.content.length).toBeLessThan(BIG.length / 10);
  expect(result.content).toContain('tool-outputs/');
  expect(session.memory()).toContain('plant1: rose1');
}

describe("workmem's tool names beside a host's", () => {
  it('keep their own names unless one clashes; then all take workmem_, again while any still clashes', () => {
    expect(ownToolPrefix(OWN, [])).toBe('');
    expect(ownToolPrefix(OWN, ['bash', 'grep'])).toBe('');
    expect(ownToolPrefix(OWN, ['bash', 'edit'])).toBe('workmem_');
    expect(ownToolPrefix(OWN, ['read', 'workmem_write'])).toBe('workmem_workmem_');
    // The prompt and the reminder name them as sent, and say today's words byte for byte without a prefix.
    const plain = systemPrompt({ fallbackThreshold: 0.75, toolNames: OWN });
    expect(plain).toContain('Use write to replace a whole file and edit to change one passage.');
    expect(systemPrompt({ fallbackThreshold: 0.75, toolNames: OWN, toolPrefix: '' })).toBe(plain);
    const prefixed = systemPrompt({
      fallbackThreshold: 0.75,
      toolNames: [...OWN.map((n) => `workmem_${n}`), 'read'],
      toolPrefix: 'workmem_',
    });
    expect(prefixed).toContain('Use workmem_write to replace a whole file and workmem_edit to change one passage.');
    expect(prefixed).toContain('(workmem_compact_history target "all")');
    expect(prefixed.replaceAll('workmem_', '')).toBe(plain);
    const meta = { tokens_used: 1, tokens_max: 2, tokens_percent: 50, messages_in_history: 1, messages_sent: 1, working_memory_size: 1 };
    const due = { level: 'gentle' as const, reason: 'rounds' as const, rounds: 6, tokensPercent: 50 };
    expect(reminderText(due, meta, 'en', null, 'workmem_')).toContain('Update it with the workmem_write or workmem_edit tool');
    expect(reminderText(due, meta, 'en', null, 'workmem_').replaceAll('workmem_', '')).toBe(reminderText(due, meta, 'en'));
  });

  it('in a Session with a host tool named read: the host keeps it, capped; workmem writes with workmem_write', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const read = defineTool({
      name: 'read',
      description: 'Read a file of the project',
      parameters: z.object({ input: z.string() }),
      execute: () => BIG,
    });
    const session = await newSession({ llm: openaiChat({ baseURL: server.baseURL, model: 'gpt-4o', apiKey: 'k' }), tools: [read] });
    const events = collect(session);
    expect(session.tools.map((t) => t.name)).toEqual([...OWN.map((n) => `workmem_${n}`), 'read']);
    for (const text of PROMPTS) await session.prompt(text);
    expect((await session.prompt('What is my plant1?')).text).toContain('rose1');
    for (const names of sentNames(server)) expect(names).toEqual([...OWN.map((n) => `workmem_${n}`), 'read']);
    expect(server.requests[0]!.body.messages[0]!.content).toContain('Use workmem_write to replace a whole file');
    expect(ofType(events, 'tool_start').map((e) => e.name)).toEqual(expect.arrayContaining(['workmem_write', 'read']));
    expectCappedAndWritten(session);
    await session.close();
  });

  it('in a Session without a clash: the names of today', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const session = await newSession({ llm: openaiChat({ baseURL: server.baseURL, model: 'gpt-4o', apiKey: 'k' }) });
    await session.prompt(PROMPTS[0]!);
    expect(sentNames(server)[0]).toEqual(OWN);
    expect(server.requests[0]!.body.messages[0]!.content).toContain('Use write to replace a whole file and edit to change one passage.');
    await session.close();
  });

  it('through the AI SDK middleware: the host spreads workmem.tools and its own read over them', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const model = createOpenAICompatible({ name: 'test', baseURL: server.baseURL, includeUsage: true }).chatModel('gpt-4o');
    const workmem = await aiSdkWorkmem({ model, home: tempHome(), cwd: '/work/project', env: {} });
    const read = tool({
      description: 'Read a file of the project',
      inputSchema: jsonSchema<{ input: string }>({ type: 'object', properties: { input: { type: 'string' } }, required: ['input'] }),
      execute: async () => BIG,
    });
    const wrapped = wrapLanguageModel({ model, middleware: workmem.middleware });
    const messages: ModelMessage[] = [];
    for (const text of PROMPTS) {
      messages.push({ role: 'user', content: text });
      const result = await generateText({ model: wrapped, messages, tools: { ...workmem.tools, read }, stopWhen: stepCountIs(10) });
      messages.push(...result.response.messages);
    }
    // The model saw one set: the host's read and workmem's under workmem_ names.
    for (const names of sentNames(server)) expect([...names].sort()).toEqual(['read', ...OWN.map((n) => `workmem_${n}`)].sort());
    expectCappedAndWritten(workmem.session);
    expect(String((messages.at(-1)!.content as { text?: string }[]).map((p) => p.text ?? '').join(''))).toContain('rose1');
    await workmem.close();
  });

  it('through the LangChain middleware: the agent keeps its read, workmem brings workmem_ tools and runs them', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'test', configuration: { baseURL: server.baseURL } });
    const workmem = await langchainWorkmem({ model, home: tempHome(), cwd: '/work/project', env: {} });
    const read = langchainTool(async () => BIG, {
      name: 'read',
      description: 'Read a file of the project',
      schema: z.object({ input: z.string() }),
    });
    const agent = createAgent({ model, tools: [read], middleware: [workmem.middleware], systemPrompt: 'Be brief.' });
    let messages: BaseMessage[] = [];
    for (const text of PROMPTS) messages = (await agent.invoke({ messages: [...messages, new HumanMessage(text)] })).messages;
    for (const names of sentNames(server)) expect(names).toEqual([...OWN.map((n) => `workmem_${n}`), 'read']);
    expectCappedAndWritten(workmem.session);
    expect(messages.at(-1)!.text).toContain('rose1');
    await workmem.close();
  });
});
