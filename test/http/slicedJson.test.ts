import { describe, expect, it } from 'vitest';
import { parseJsonInSlices } from '../../src/http/slicedJson.js';

const turnAtOnce = (): Promise<void> => Promise.resolve();

/** A Chat Completions body of `n` messages, with what a scan could trip on in them. */
function body(n: number): Record<string, unknown> {
  const messages = Array.from({ length: n }, (_, i) =>
    i % 3 === 0
      ? { role: 'user', content: `Question ${i}: a "quoted" word, a back\\slash\\\\, braces {[ ]} and 中文 ✓ \u2028` }
      : i % 3 === 1
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'f', arguments: '{"a":[1,{"b":"}"}]}' } }],
          }
        : {
            role: 'tool',
            tool_call_id: `c${i - 1}`,
            content: [{ type: 'text', text: 'x'.repeat(i % 50) }],
            n: -1.5e3,
            ok: true,
            none: null,
          },
  );
  return { model: 'gpt-4o', stream: true, temperature: 0.2, messages, tools: [], metadata: { nested: { deep: [1, 2, 3] } } };
}

describe('parseJsonInSlices', () => {
  it('gives what JSON.parse gives for a body of megabytes, compact or spaced', async () => {
    const value = body(12_000);
    for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2), ` \n${JSON.stringify(value, null, '\t')}\r\n `]) {
      expect(text.length).toBeGreaterThan(256 * 1024);
      expect(await parseJsonInSlices(text, turnAtOnce)).toEqual(JSON.parse(text));
    }
  });

  it('gives the same from the pieces a body was read in, wherever they are cut', async () => {
    const value = body(9_000);
    // And a message across several pieces.
    (value.messages as unknown[]).splice(4_000, 0, { role: 'user', content: `a "long" one \\ ${'q'.repeat(200_000)}` });
    const text = JSON.stringify({ ...value, temperature: 0.123456789, top: -12.5e-3, last: 'tail' }, null, 1);
    // Cut everywhere a scan could go wrong: in a number, a string, an escape, between a
    // backslash and its quote, after a bracket, and in pieces of one character.
    const cuts = [...text.matchAll(/\\"|0\.12|-12|\[\{|"tail"|中文/g)].map((m) => m.index! + 1);
    for (let at = 7; at < text.length; at += 65_537) cuts.push(at);
    cuts.push(text.length - 1, text.length - 2);
    const ends = [...new Set(cuts)].sort((a, b) => a - b);
    const pieces = ends.map((end, i) => text.slice(i ? ends[i - 1] : 0, end)).concat(text.slice(ends.at(-1)));
    expect(pieces.join('')).toBe(text);
    expect(pieces.some((p) => p.length === 1)).toBe(true);
    // Never joined whole (nor parsed whole again, as a scan gone wrong would be).
    const unjoinable = Object.assign([...pieces], {
      join: (): never => {
        throw new Error('the pieces were joined');
      },
    });
    expect(await parseJsonInSlices(unjoinable, turnAtOnce)).toEqual(JSON.parse(text));
    // A malformed body in pieces throws JSON.parse's error for the whole.
    const broken = [...pieces.slice(0, -1), `${pieces.at(-1)}x`];
    await expect(parseJsonInSlices(broken, turnAtOnce)).rejects.toThrow(SyntaxError);
    expect(await parseJsonInSlices(['{"a":', ' [1, 2]}'], turnAtOnce)).toEqual({ a: [1, 2] });
  });

  it('lets the loop turn while it parses a large body', async () => {
    const text = JSON.stringify(body(30_000));
    let pauses = 0;
    let turned = 0;
    const timer = setInterval(() => turned++, 0);
    try {
      const pause = (): Promise<void> => {
        pauses++;
        return new Promise((resolve) => setTimeout(resolve, 0));
      };
      expect(await parseJsonInSlices(text, pause)).toEqual(JSON.parse(text));
    } finally {
      clearInterval(timer);
    }
    // Parsing megabytes takes more than one slice of a millisecond on any machine.
    expect(pauses).toBeGreaterThan(1);
    expect(turned).toBeGreaterThan(0);
  });

  it('keeps "__proto__" an own property, as JSON.parse does', async () => {
    const text = `{"__proto__": {"polluted": true}, "messages": ${JSON.stringify(body(4000).messages)}}`;
    const value = (await parseJsonInSlices(text, turnAtOnce)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'messages']);
    expect(value).toEqual(JSON.parse(text));
  });

  it("throws JSON.parse's own error for a malformed body, large or small", async () => {
    const good = JSON.stringify(body(4000));
    const broken = [
      good.slice(0, -1),
      `${good}x`,
      good.replace('"messages":[', '"messages":[,'),
      good.replace('"stream":true', '"stream":tru'),
      good.replace('},{', '}{'),
      good.replace('"model"', 'model'),
      '{"a": 1,}',
    ];
    for (const text of broken) {
      const native = await Promise.resolve(text)
        .then(JSON.parse)
        .catch((error: unknown) => error);
      expect(native).toBeInstanceOf(SyntaxError);
      await expect(parseJsonInSlices(text, turnAtOnce)).rejects.toThrow(new SyntaxError((native as SyntaxError).message));
    }
  });

  it('parses a top-level array and scalars', async () => {
    const list = JSON.stringify(body(5000).messages);
    expect(await parseJsonInSlices(list, turnAtOnce)).toEqual(JSON.parse(list));
    const long = JSON.stringify('y'.repeat(300_000));
    expect(await parseJsonInSlices(long, turnAtOnce)).toBe('y'.repeat(300_000));
    expect(await parseJsonInSlices('42', turnAtOnce)).toBe(42);
  });
});
