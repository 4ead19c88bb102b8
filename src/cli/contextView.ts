/**
 * `/context` in chat: what the last request held (or what the next will, before the
 * first), as text — the breakdown of src/prompt/contextBreakdown.ts, a bar of the window
 * with the compaction line and the output reserve, and what compactions archived where.
 * ContextWatch keeps, from the session's events, what the breakdown is built from.
 */
import type { ReminderReason, WorkmemEvent } from '../events.js';
import type { HistoryView } from '../history/historyView.js';
import type { MemorySnapshot } from '../memory/memoryRules.js';
import {
  contextBreakdown,
  type BuiltRequest,
  type CompactionRecord,
  type ContextBreakdown,
  type GroupKey,
} from '../prompt/contextBreakdown.js';
import type { BackgroundState, Session } from '../session/index.js';
import { followCompactions } from './compactionFigures.js';
import { terminalLine } from './terminalText.js';

interface Seen {
  request: BuiltRequest;
  history: HistoryView;
  memory: MemorySnapshot | null;
  reminder: { level: 'gentle' | 'firm' | 'urgent'; reason: ReminderReason } | null;
}

/** A breakdown as /context shows it: with the session's background compaction (what it prepares, what it has cost). */
export type ContextView = ContextBreakdown & { background?: BackgroundState & { threshold: number | null } };

/** Follows one session: its last request as built, with the history and memory it was built from, and its compactions. */
export class ContextWatch {
  private last: Seen | null = null;
  private reminder: (Seen['reminder'] & { turn: number; request: number }) | null = null;
  private readonly compactions: CompactionRecord[] = [];
  private readonly stop: () => void;

  constructor(private readonly session: Session) {
    const stopEvents = session.on('*', (e) => this.seen(e));
    const stopCompactions = followCompactions(session, (e, tokensBefore, tokensAfter) =>
      this.compactions.push({ turn: e.turn, reason: e.reason, replaced: e.replaced, tokensBefore, tokensAfter, files: e.files }),
    );
    this.stop = () => {
      stopEvents();
      stopCompactions();
    };
  }

  close(): void {
    this.stop();
  }

  async breakdown(): Promise<ContextView> {
    const background = { ...this.session.state.background, threshold: this.session.settings.backgroundThreshold };
    return { ...(await this.request()), background };
  }

  private async request(): Promise<ContextBreakdown> {
    const s = this.session;
    const common = {
      counter: s.counter,
      language: s.settings.language,
      reserveOutputTokens: s.settings.reserveOutputTokens,
      threshold: s.settings.fallbackThreshold,
      compactions: this.compactions,
      memoryPosition: s.settings.memoryPosition,
    };
    if (this.last) return contextBreakdown({ ...this.last, memory: this.last.memory ?? (await s.record.memory.snapshot()), ...common });
    // Before the first request: the next one, as the turn will build it.
    const next = await s.nextRequest();
    const memory = s.record.memory.lastSnapshot ?? (await s.record.memory.snapshot());
    const request = {
      turn: s.record.lastTurn + 1,
      request: 1,
      mode: s.state.mode,
      range: next.range,
      pinned: next.pinned,
      tokens: next.tokens,
    };
    const reminder = next.reminder ? { level: next.reminder.level, reason: next.reminder.reason } : null;
    return contextBreakdown({ request, estimate: true, history: s.history, memory, reminder, ...common });
  }

  private seen(e: WorkmemEvent): void {
    if (e.type === 'reminder') this.reminder = { turn: e.turn, request: e.request, level: e.level, reason: e.reason };
    if (e.type === 'prompt_built') {
      const reminder = this.reminder?.turn === e.turn && this.reminder.request === e.request ? this.reminder : null;
      this.last = {
        request: {
          turn: e.turn,
          request: e.request,
          mode: e.mode,
          range: e.range,
          ...(e.pinned ? { pinned: e.pinned } : {}),
          tokens: e.tokens,
        },
        history: this.session.history,
        memory: this.session.record.memory.lastSnapshot,
        reminder: reminder ? { level: reminder.level, reason: reminder.reason } : null,
      };
    }
  }
}

const BAR = 60;
const MARK: Record<GroupKey, string> = { system: 'S', memory: 'M', detail_index: 'D', pinned: 'P', history: 'H', tail: 'T' };

export function renderContext(b: ContextView): string {
  const n = (x: number): string => x.toLocaleString('en-US');
  const label = Math.max(...b.groups.map((g) => g.label.length), 'server calibration'.length);
  const row = (name: string, tokens: string, percent: string, about = ''): string =>
    `  ${name.padEnd(label)}  ${tokens.padStart(7)}  ${percent.padStart(6)}  ${about}`.trimEnd();
  const lines = [
    b.estimate
      ? `Context of the next request (an estimate before your message: turn ${b.turn}) · ${b.mode}`
      : `Context of the last request: turn ${b.turn}, request ${b.request} · ${b.mode}`,
  ];
  for (const g of b.groups) {
    lines.push(row(g.label, n(g.tokens), `${g.percent.toFixed(1)} %`, terminalLine(g.about)));
    if (g.parts && g.parts.length > 1) for (const p of g.parts) lines.push(row(`  ${p.label}`, n(p.tokens), ''));
  }
  if (b.calibration) lines.push(row('server calibration', `${b.calibration > 0 ? '+' : ''}${n(b.calibration)}`, ''));
  lines.push(row('total', n(b.total), `${b.percent} %`, `of ${n(b.window)} tokens`));
  lines.push(`  [${bar(b)}]`);
  lines.push(
    `  ${b.groups.map((g) => `${MARK[g.key]} ${g.label.split(' · ')[0]}`).join('  ')}  · free (${n(b.free)})`,
    `  | ${b.threshold.percent} % (${n(b.threshold.tokens)} tokens): the system compacts above it  r reserved output (${n(b.reserveOutputTokens)})`,
  );
  lines.push(...archives(b));
  if (b.background) lines.push(...backgroundLines(b.background, b.window));
  return lines.join('\n');
}

/** The fallback's next summary, prepared in the background: where it stands, and what such summaries have cost. */
function backgroundLines(bg: NonNullable<ContextView['background']>, window: number): string[] {
  const n = (x: number): string => x.toLocaleString('en-US');
  if (bg.status === 'off' || bg.threshold === null) return ['Background summaries: off (no summarizer, or backgroundThreshold false)'];
  const now =
    bg.status === 'summarizing'
      ? `summarising turns ${bg.turns}`
      : bg.status === 'ready'
        ? `ready (turns ${bg.turns}), swapped in when the fallback compacts`
        : bg.status === 'resting'
          ? 'the last one failed; tried again later'
          : 'none under way';
  const at = `${Math.round(bg.threshold * 1000) / 10} % (${n(Math.floor(bg.threshold * window))} tokens)`;
  const cost = bg.usage ? ` · cost ${n(bg.usage.input)} input (${n(bg.usage.cached)} cached), ${n(bg.usage.output)} output tokens` : '';
  return [
    `Background summaries (prepared above ${at}): ${now}`,
    `  made ${bg.made}, swapped in ${bg.used}, dropped ${bg.dropped}, failed ${bg.failed}${cost}`,
  ];
}

function bar(b: ContextBreakdown): string {
  const cells = new Array<string>(BAR).fill('·');
  const at = (tokens: number): number => Math.min(BAR, Math.round((tokens / b.window) * BAR));
  let used = Math.max(0, b.calibration); // a positive calibration is part of what the request costs, drawn first
  for (const g of b.groups) {
    for (let i = at(used); i < at(used + g.tokens); i++) cells[i] = MARK[g.key];
    used += g.tokens;
  }
  for (let i = at(b.window - b.reserveOutputTokens); i < BAR; i++) if (cells[i] === '·') cells[i] = 'r';
  cells[Math.min(BAR - 1, at(b.threshold.tokens))] = '|';
  return cells.join('');
}

function archives(b: ContextBreakdown): string[] {
  const lines: string[] = [];
  const n = (x: number): string => x.toLocaleString('en-US');
  if (b.compactions.length) {
    lines.push('Compactions in this chat:');
    for (const c of b.compactions)
      lines.push(
        `  turn ${c.turn} (${c.reason}): ${c.replaced} items, history ${n(c.tokensBefore)} → ${n(c.tokensAfter)} tokens → ${terminalLine(c.files.join(', '))}`,
      );
  }
  const marks = b.history.marks;
  if (marks.length) {
    lines.push('Archived, in the history this request carried:');
    for (const m of marks)
      lines.push(
        `  message ${m.index + 1} (turn ${m.turn}, ${n(m.tokens)} tokens): ${m.kind === 'note' ? 'a note for archived turns' : 'a moved tool output'} → ${terminalLine(m.file ?? '(file not named)')}`,
      );
  }
  if (!lines.length) lines.push('No compaction yet: the history is whole.');
  return lines;
}
