/**
 * Item memory (docs/design.md §8): capacity-limited short-term memories, like human working memory.
 * - priority = importance × decay, decay = max(0.1, decayFactor^(hours/6)); the lowest
 *   priority is evicted first, from a min-heap. Every item decays by the same factor, so
 *   ln(importance) + (added/6h)·(−ln decayFactor) orders items exactly as their priorities
 *   at any moment: a static heap key. Past the 0.1 floor (~11 days at 0.95) that order is
 *   wrong, so while any item is that old the lowest priority is found by a scan instead.
 * - TTL (maxAgeMinutes) is applied first on every add, retrieve and forget.
 * - retrieval: (0.7 × TF-IDF cosine + 0.3 × keyword overlap) × decay × (0.8 + 0.4 × importance),
 *   over Intl.Segmenter words plus, for Chinese, characters and character bigrams (textTerms.ts),
 *   so Chinese retrieves as well as English whatever the segmentation.
 * The clock is injectable; all inputs are checked before anything changes.
 *
 * Over 350 lines: one class whose capacity, decay, retrieval and forgetting share its
 * private indexes (the heap, term counts, document frequencies), kept consistent together.
 */
import { randomUUID } from 'node:crypto';
import { MinHeap } from './minHeap.js';
import { terms } from './textTerms.js';

export interface ItemMemoryOptions {
  maxCapacity?: number;
  /** Counted in real tokens. */
  maxTokens?: number;
  maxAgeMinutes?: number;
  /** Decay per 6 hours. */
  decayFactor?: number;
  now?: () => number;
  countTokens: (text: string) => number;
}

export interface MemoryItem {
  id: string;
  content: string;
  importance: number;
  timestamp: number;
  tokens: number;
  userId?: string;
  metadata?: Record<string, unknown>;
}

export interface Retrieved {
  item: MemoryItem;
  score: number;
  relevance: number;
}

export type ForgetStrategy = 'importance_based' | 'time_based' | 'capacity_based';

export interface ItemMemoryChange {
  added?: MemoryItem;
  removed?: string[];
}

export class ItemMemoryError extends Error {
  override name = 'ItemMemoryError';
}

interface Entry {
  item: MemoryItem;
  counts: Map<string, number>;
}

interface HeapEntry {
  key: number;
  timestamp: number;
  id: string;
}

const HOUR = 3_600_000;
const DECAY_FLOOR = 0.1;
const MIN_SUMMARY_TAIL = 50;

/** Short-term item memory on its own: capacity- and token-bounded items, decaying priority, hybrid retrieval (English and Chinese). */
export class ItemMemory {
  readonly maxCapacity: number;
  readonly maxTokens: number;
  readonly maxAgeMinutes: number;
  readonly decayFactor: number;
  private readonly now: () => number;
  private readonly countTokens: (text: string) => number;
  private readonly entries = new Map<string, Entry>();
  /** Ids in the order they were added (= timestamp order): expiry pops from the front. */
  private byTime: string[] = [];
  private byTimeHead = 0;
  private readonly heap = new MinHeap<HeapEntry>((a, b) => a.key < b.key || (a.key === b.key && a.timestamp < b.timestamp));
  private readonly df = new Map<string, number>();
  private readonly postings = new Map<string, Set<string>>();
  private tokenTotal = 0;
  private readonly listeners = new Set<(change: ItemMemoryChange) => void>();

  constructor(options: ItemMemoryOptions) {
    this.maxCapacity = positiveInteger('maxCapacity', options.maxCapacity ?? 10);
    this.maxTokens = positiveInteger('maxTokens', options.maxTokens ?? 2000);
    this.maxAgeMinutes = positiveNumber('maxAgeMinutes', options.maxAgeMinutes ?? 120);
    this.decayFactor = options.decayFactor ?? 0.95;
    if (!(this.decayFactor > 0 && this.decayFactor <= 1))
      throw new ItemMemoryError(`decayFactor must be in (0, 1], got ${options.decayFactor}`);
    this.now = options.now ?? Date.now;
    this.countTokens = options.countTokens;
  }

  /** Called after every change (persistence listens here). */
  onChange(listener: (change: ItemMemoryChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get size(): number {
    return this.entries.size;
  }

  add(input: { content: unknown; importance?: unknown; userId?: unknown; metadata?: unknown }): MemoryItem {
    const content = typeof input?.content === 'string' ? input.content.trim() : '';
    if (!content) throw new ItemMemoryError('content must be a non-empty string');
    const importance = input.importance === undefined ? 0.5 : input.importance;
    if (typeof importance !== 'number' || !Number.isFinite(importance) || importance < 0 || importance > 1) {
      throw new ItemMemoryError(`importance must be a number from 0 to 1, got ${JSON.stringify(input.importance)}`);
    }
    if (input.userId !== undefined && (typeof input.userId !== 'string' || !input.userId))
      throw new ItemMemoryError('userId must be a non-empty string');
    if (input.metadata !== undefined && (typeof input.metadata !== 'object' || input.metadata === null || Array.isArray(input.metadata))) {
      throw new ItemMemoryError('metadata must be a plain object');
    }
    const tokens = this.countTokens(content);
    if (tokens > this.maxTokens) throw new ItemMemoryError(`the item is ${tokens} tokens; the memory holds at most ${this.maxTokens}`);

    this.expire();
    const item: MemoryItem = {
      id: randomUUID(),
      content,
      importance,
      timestamp: this.now(),
      tokens,
      ...(input.userId !== undefined ? { userId: input.userId as string } : {}),
      ...(input.metadata !== undefined ? { metadata: input.metadata as Record<string, unknown> } : {}),
    };
    this.insert(item);
    const removed = this.enforceCapacity(this.maxCapacity);
    this.notify({ added: item, ...(removed.length ? { removed } : {}) });
    return item;
  }

  retrieve(query: unknown, options: { limit?: number; userId?: string } = {}): Retrieved[] {
    if (typeof query !== 'string') throw new ItemMemoryError(`query must be a string, got ${query === null ? 'null' : typeof query}`);
    const limit = options.limit ?? 5;
    if (!Number.isInteger(limit) || limit < 1)
      throw new ItemMemoryError(`limit must be a whole number of at least 1, got ${options.limit}`);
    this.expire();
    const phrase = query.trim().toLowerCase();
    const queryTerms = terms(query);
    if (!phrase || queryTerms.length === 0) return [];

    const n = this.entries.size;
    const idf = (term: string): number => Math.log((n + 1) / ((this.df.get(term) ?? 0) + 1)) + 1;
    const queryCounts = countTerms(queryTerms);
    let queryNorm = 0;
    for (const [term, count] of queryCounts) queryNorm += (count * idf(term)) ** 2;
    queryNorm = Math.sqrt(queryNorm);

    // Candidates share a query term; very common terms do not nominate (they still score).
    const candidates = new Set<string>();
    for (const term of queryCounts.keys()) {
      const posting = this.postings.get(term);
      if (!posting || (n > 200 && posting.size > n / 2)) continue;
      for (const id of posting) candidates.add(id);
    }
    const now = this.now();
    const results: Retrieved[] = [];
    for (const id of candidates) {
      const entry = this.entries.get(id)!;
      if (options.userId !== undefined && entry.item.userId !== options.userId) continue;
      let dot = 0;
      let norm = 0;
      let shared = 0;
      for (const [term, count] of entry.counts) {
        const weight = count * idf(term);
        norm += weight * weight;
        const q = queryCounts.get(term);
        if (q) {
          dot += weight * q * idf(term);
          shared++;
        }
      }
      const cosine = dot / (Math.sqrt(norm) * queryNorm || 1);
      const keyword = entry.item.content.toLowerCase().includes(phrase) ? 1 : shared / queryCounts.size;
      const relevance = 0.7 * cosine + 0.3 * keyword;
      const score = relevance * this.decay(now - entry.item.timestamp) * (0.8 + 0.4 * entry.item.importance);
      if (score > 0) results.push({ item: entry.item, score, relevance });
    }
    return results.sort((a, b) => b.score - a.score || b.item.timestamp - a.item.timestamp).slice(0, limit);
  }

  /**
   * TTL first, always; then the strategy. Returns the items removed. With `userId`, the
   * strategy touches that user's items only and only theirs are returned.
   */
  forget(options: { strategy: unknown; threshold?: unknown; maxAgeDays?: unknown; userId?: string }): MemoryItem[] {
    const strategies: ForgetStrategy[] = ['importance_based', 'time_based', 'capacity_based'];
    if (!strategies.includes(options?.strategy as ForgetStrategy)) {
      throw new ItemMemoryError(`unknown forget strategy ${JSON.stringify(options?.strategy)}; use one of ${strategies.join(', ')}`);
    }
    const strategy = options.strategy as ForgetStrategy;
    const number = (name: string, value: unknown, fallback: number | undefined, min: number, max = Infinity): number => {
      const v = value ?? fallback;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
        throw new ItemMemoryError(
          `${name} must be a number from ${min}${max < Infinity ? ` to ${max}` : ''}, got ${JSON.stringify(value)}`,
        );
      return v;
    };
    let select: (item: MemoryItem) => boolean = () => false;
    let capacity: number | null = null;
    if (strategy === 'importance_based') {
      const threshold = number('threshold', options.threshold, 0.3, 0, 1);
      select = (item) => item.importance < threshold;
    } else if (strategy === 'time_based') {
      const days = number('maxAgeDays', options.maxAgeDays, undefined, 0);
      const cutoff = this.now() - days * 24 * HOUR;
      select = (item) => item.timestamp < cutoff;
    } else {
      capacity = Math.floor(number('threshold', options.threshold, this.maxCapacity, 0));
    }
    const owned = (item: MemoryItem): boolean => options.userId === undefined || item.userId === options.userId;
    const before = new Map([...this.entries].map(([id, e]) => [id, e.item]));
    const expired = this.expire();
    let removed: string[];
    if (capacity === null)
      removed = [...this.entries.values()].filter((e) => owned(e.item) && select(e.item)).map((e) => this.remove(e.item.id));
    else if (options.userId === undefined) removed = this.enforceCapacity(capacity);
    else {
      const now = this.now();
      const mine = [...this.entries.values()]
        .map((e) => e.item)
        .filter(owned)
        .sort((a, b) => this.priorityAt(a, now) - this.priorityAt(b, now) || a.timestamp - b.timestamp);
      removed = mine.slice(0, Math.max(0, mine.length - capacity)).map((item) => this.remove(item.id));
    }
    const all = [...expired, ...removed];
    if (all.length) this.notify({ removed: all });
    return all.map((id) => before.get(id)!).filter(owned);
  }

  /** Forget one item; with `userId`, only if it is that user's. */
  forgetItem(id: string, userId?: string): MemoryItem | null {
    const entry = this.entries.get(id);
    if (!entry || (userId !== undefined && entry.item.userId !== userId)) return null;
    this.remove(id);
    this.notify({ removed: [id] });
    return entry.item;
  }

  /** Greedy by (importance, recency) within maxLength characters; the last item is cut if 50+ characters remain. */
  contextSummary(maxLength = 500): string {
    if (!Number.isInteger(maxLength) || maxLength < 1)
      throw new ItemMemoryError(`maxLength must be a whole number of at least 1, got ${maxLength}`);
    this.expire();
    const sorted = [...this.entries.values()].map((e) => e.item).sort((a, b) => b.importance - a.importance || b.timestamp - a.timestamp);
    const lines: string[] = [];
    let used = 0;
    for (const item of sorted) {
      const line = `- ${item.content}`;
      const cost = line.length + (lines.length ? 1 : 0);
      if (used + cost <= maxLength) {
        lines.push(line);
        used += cost;
        continue;
      }
      const room = maxLength - used - (lines.length ? 1 : 0);
      if (room >= MIN_SUMMARY_TAIL) lines.push(`${line.slice(0, room - 1)}…`);
      break;
    }
    return lines.join('\n');
  }

  stats(): {
    count: number;
    tokens: number;
    maxCapacity: number;
    maxTokens: number;
    maxAgeMinutes: number;
    averageImportance: number;
    oldestAgeMinutes: number | null;
  } {
    this.expire();
    const items = [...this.entries.values()].map((e) => e.item);
    const oldest = items.reduce<number | null>((min, i) => (min === null || i.timestamp < min ? i.timestamp : min), null);
    return {
      count: items.length,
      tokens: this.tokenTotal,
      maxCapacity: this.maxCapacity,
      maxTokens: this.maxTokens,
      maxAgeMinutes: this.maxAgeMinutes,
      averageImportance: items.length ? items.reduce((n, i) => n + i.importance, 0) / items.length : 0,
      oldestAgeMinutes: oldest === null ? null : (this.now() - oldest) / 60_000,
    };
  }

  /** importance × max(0.1, decayFactor^(hours/6)), as of now. */
  priority(item: MemoryItem): number {
    return this.priorityAt(item, this.now());
  }

  private priorityAt(item: MemoryItem, now: number): number {
    return item.importance * this.decay(now - item.timestamp);
  }

  items(): MemoryItem[] {
    return [...this.entries.values()].map((e) => e.item);
  }

  /** Put back persisted items (expired ones are dropped); nothing is notified. */
  restore(items: readonly MemoryItem[]): void {
    for (const item of [...items].sort((a, b) => a.timestamp - b.timestamp)) if (!this.entries.has(item.id)) this.insert(item);
    this.expire();
    this.enforceCapacity(this.maxCapacity);
  }

  decay(ageMs: number): number {
    return Math.max(DECAY_FLOOR, this.decayFactor ** (Math.max(0, ageMs) / HOUR / 6));
  }

  private heapKey(item: MemoryItem): number {
    return Math.log(Math.max(item.importance, Number.MIN_VALUE)) - (item.timestamp / HOUR / 6) * Math.log(this.decayFactor);
  }

  private insert(item: MemoryItem): void {
    const counts = countTerms(terms(item.content));
    this.entries.set(item.id, { item, counts });
    for (const term of counts.keys()) {
      this.df.set(term, (this.df.get(term) ?? 0) + 1);
      let posting = this.postings.get(term);
      if (!posting) this.postings.set(term, (posting = new Set()));
      posting.add(item.id);
    }
    this.tokenTotal += item.tokens;
    this.byTime.push(item.id);
    this.heap.push({ key: this.heapKey(item), timestamp: item.timestamp, id: item.id });
  }

  private remove(id: string): string {
    const entry = this.entries.get(id)!;
    this.entries.delete(id);
    for (const term of entry.counts.keys()) {
      const left = (this.df.get(term) ?? 1) - 1;
      if (left) this.df.set(term, left);
      else this.df.delete(term);
      const posting = this.postings.get(term);
      posting?.delete(id);
      if (posting && posting.size === 0) this.postings.delete(term);
    }
    this.tokenTotal -= entry.item.tokens;
    // Stale heap and queue entries are skipped later; rebuild when they dominate.
    if (this.heap.size > 2 * this.entries.size + 64) this.heap.compact((h) => this.entries.has(h.id));
    return id;
  }

  private expire(): string[] {
    const cutoff = this.now() - this.maxAgeMinutes * 60_000;
    const removed: string[] = [];
    while (this.byTimeHead < this.byTime.length) {
      const id = this.byTime[this.byTimeHead]!;
      const entry = this.entries.get(id);
      if (entry && entry.item.timestamp > cutoff) break;
      this.byTimeHead++;
      if (entry) removed.push(this.remove(id));
    }
    if (this.byTimeHead > 1024 && this.byTimeHead > this.byTime.length / 2) {
      this.byTime = this.byTime.slice(this.byTimeHead);
      this.byTimeHead = 0;
    }
    return removed;
  }

  /** Evict the lowest priority until within `capacity` items and maxTokens. */
  private enforceCapacity(capacity: number): string[] {
    const removed: string[] = [];
    while (this.entries.size > capacity || this.tokenTotal > this.maxTokens) {
      if (this.oldestReachedFloor()) {
        removed.push(this.remove(this.lowestByScan()));
        continue;
      }
      const top = this.heap.pop();
      if (!top) break;
      if (this.entries.has(top.id)) removed.push(this.remove(top.id));
    }
    return removed;
  }

  /** Whether the oldest live item has decayed to the floor, where the heap's key no longer orders by priority. */
  private oldestReachedFloor(): boolean {
    if (this.decayFactor >= 1) return false;
    const floorAgeMs = (6 * HOUR * Math.log(DECAY_FLOOR)) / Math.log(this.decayFactor);
    for (let i = this.byTimeHead; i < this.byTime.length; i++) {
      const entry = this.entries.get(this.byTime[i]!);
      if (entry) return this.now() - entry.item.timestamp >= floorAgeMs;
    }
    return false;
  }

  /** The live item of lowest priority as of now, the older on a tie (as the heap breaks ties). */
  private lowestByScan(): string {
    const now = this.now();
    let lowest: { id: string; priority: number; timestamp: number } | null = null;
    for (const { item } of this.entries.values()) {
      const priority = this.priorityAt(item, now);
      if (!lowest || priority < lowest.priority || (priority === lowest.priority && item.timestamp < lowest.timestamp))
        lowest = { id: item.id, priority, timestamp: item.timestamp };
    }
    return lowest!.id;
  }

  private notify(change: ItemMemoryChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

function countTerms(list: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const term of list) counts.set(term, (counts.get(term) ?? 0) + 1);
  return counts;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new ItemMemoryError(`${name} must be a whole number of at least 1, got ${value}`);
  return value;
}

function positiveNumber(name: string, value: number): number {
  if (typeof value !== 'number' || !(value > 0)) throw new ItemMemoryError(`${name} must be a positive number, got ${value}`);
  return value;
}
