/**
 * The child of tokenCount.ts (run with --expose-gc): times a short count right after major
 * collections, with workmem's counter and with gpt-tokenizer's own countTokens; prints the
 * two lists of µs as JSON.
 */
import { countTokens } from 'gpt-tokenizer/model/gpt-4o';
import { loadTokenCounter } from '../../src/tokens/tokens.js';
import { now } from './harness.js';

const [samples, collections] = process.argv.slice(2).map(Number) as [number, number];
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('tokenCountChild needs node --expose-gc');
const counter = await loadTokenCounter('gpt-4o');
const PLAIN = { disallowedSpecial: new Set<string>() };
const text = 'Question 12: what changed since the last request?';
for (let i = 0; i < 1000; i++) {
  counter.text(`warm-up ${i}`);
  countTokens(`warm-up ${i}`, PLAIN);
}

function timed(count: (text: string) => number): number[] {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    for (let c = 0; c < collections; c++) gc!();
    const start = now();
    count(text);
    times.push((now() - start) * 1000);
  }
  return times;
}

process.stdout.write(JSON.stringify({ workmem: timed((s) => counter.text(s)), library: timed((s) => countTokens(s, PLAIN)) }));
