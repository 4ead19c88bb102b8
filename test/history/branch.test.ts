/**
 * A host that departs from the log — it regenerated an answer, or compacted its own history
 * — takes a branch that the session follows (issue 28): a branch entry records the point,
 * the derived history drops what the branch left behind and undoes workmem's compactions
 * that reached past it (giving back the kept messages they replaced), and the log keeps
 * every line. On the file store and on PostgreSQL, live and after a reopen.
 */
import { describe, expect, it } from 'vitest';
import { deriveHistory } from '../../src/history/deriveHistory.js';
import type { ChatMessage } from '../../src/history/messages.js';
import { HostLoop } from '../../src/session/hostLoop.js';
import type { LogEntry } from '../../src/storage/messageLog.js';
import { readSession } from '../../src/session/index.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { storesUnderTest, type StoreUnderTest } from '../storage/stores.js';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const entry = (seq: number, turn: number, message: ChatMessage): LogEntry => ({ type: 'message', seq, ts: 0, turn, tokens: 10, message });
const texts = (entries: LogEntry[]) => deriveHistory(entries).view.items.map((i) => i.message.content);

describe('deriveHistory follows a branch', () => {
  const messages: LogEntry[] = [
    entry(1, 1, user('u1')),
    entry(2, 1, assistant('a1')),
    entry(3, 2, user('u2')),
    entry(4, 2, assistant('a2')),
    entry(5, 3, user('u3')),
    entry(6, 3, assistant('a3')),
  ];
  const compaction: LogEntry = {
    type: 'compaction',
    seq: 7,
    ts: 0,
    turn: 3,
    reason: 'llm',
    target: 'conversation',
    strategy: 'archive',
    replaces: { from: 1, to: 4, count: 4 },
    note: { message: user('[Earlier conversation compacted: u1 to a2]'), tokens: 5 },
    files: ['detail/archive.md'],
    tokensBefore: 60,
    tokensAfter: 25,
  };
  const branch = (after: number): LogEntry => ({ type: 'branch', seq: 8, ts: 0, turn: 3, after, dropped: 0, reason: 'edited' });

  it('drops the messages after the branch point; a compaction that reached past it gives back the kept messages it replaced', () => {
    expect(texts([...messages, compaction])).toEqual(['[Earlier conversation compacted: u1 to a2]', 'u3', 'a3']);
    expect(texts([...messages, compaction, branch(2)])).toEqual(['u1', 'a1']);
    expect(texts([...messages, compaction, branch(2), entry(9, 4, user('u2 edited'))])).toEqual(['u1', 'a1', 'u2 edited']);
  });

  it('keeps a compaction that stands only for kept messages', () => {
    expect(texts([...messages, compaction, branch(4)])).toEqual(['[Earlier conversation compacted: u1 to a2]']);
    expect(texts([...messages, compaction, branch(5)])).toEqual(['[Earlier conversation compacted: u1 to a2]', 'u3']);
  });

  it('a branch from the start leaves nothing; the host line is cut at the same point', () => {
    const derived = deriveHistory([...messages, branch(0), entry(9, 4, user('fresh'))]);
    expect(derived.view.items.map((i) => i.message.content)).toEqual(['fresh']);
    expect(derived.line.elements.map((e) => e.at)).toEqual([[9]]);
    expect(derived.messageCount).toBe(7); // the log keeps every message
  });
});

describe.each(storesUnderTest('branch'))('a host loop that departs from the log ($name store)', (store: StoreUnderTest) => {
  /** One model call of a host whose whole conversation is `messages`: the model answers `answer`. */
  async function call(where: ReturnType<StoreUnderTest['fresh']>, messages: ChatMessage[], answer: string): Promise<ChatMessage[]> {
    const loop = await HostLoop.open({
      ...where,
      sessionId: 'branching',
      model: 'gpt-4o',
      contextWindow: 32_000,
      cwd: '/b',
      env: {},
      recordToolResults: true,
    });
    try {
      const prepared = await loop.prepare({ messages, tools: [], whole: true });
      const sent = prepared.request.messages;
      await prepared.answer({ message: { role: 'assistant', content: answer }, usage: null, finishReason: 'stop' });
      return sent;
    } finally {
      await loop.close();
    }
  }

  it('follows a regenerated answer and a history the host compacted itself; every message stays in the log', async () => {
    const where = store.fresh();
    const conversation: ChatMessage[] = [{ role: 'system', content: 'Be brief.' }];
    for (let i = 1; i <= 6; i++) {
      conversation.push(user(`question ${i}`));
      await call(where, conversation, `answer ${i}`);
      conversation.push(assistant(`answer ${i}`));
    }
    // Regenerate: the host drops its last answer and asks again.
    conversation.pop();
    let sent = await call(where, conversation, 'answer 6, again');
    expect(sent.map((m) => m.content).join('\n')).not.toContain('answer 6\n');
    conversation.push(assistant('answer 6, again'));
    // Its own compaction: a summary instead of questions 1-4, the last two exchanges kept, a new question.
    const compacted: ChatMessage[] = [
      conversation[0]!,
      user('Summary: questions 1 to 4 were answered.'),
      ...conversation.slice(9),
      user('question 7'),
    ];
    sent = await call(where, compacted, 'answer 7');
    const shown = sent.map((m) => m.content ?? '').join('\n');
    expect(shown).toContain('Summary: questions 1 to 4');
    expect(shown).not.toContain('question 1\n');
    expect(shown).toContain('question 5');

    const reader = await readSession(sessionIdFor('branching'), where);
    const log = (await reader.readLog()).entries;
    const branches = log.filter((e) => e.type === 'branch');
    expect(branches.map((b) => (b as { reason: string }).reason)).toEqual(['edited', 'compacted']);
    const all = log.flatMap((e) => (e.type === 'message' ? [e.message.content] : []));
    for (let i = 1; i <= 7; i++) expect(all).toContain(`question ${i}`);
    expect(all).toContain('answer 6');
    expect(all).toContain('answer 6, again');
    // Opened again, the derived history is the host's last branch.
    const derived = deriveHistory(log).view.items.map((i) => i.message.content);
    expect(derived).toEqual([
      'Summary: questions 1 to 4 were answered.',
      'question 5',
      'answer 5',
      'question 6',
      'answer 6, again',
      'question 7',
      'answer 7',
    ]);
  });
});
