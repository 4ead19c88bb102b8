/**
 * compact_history: the model compacts its own history (docs/design.md §2.4, §6).
 * target conversation | tools | all, strategy archive | summarize, keep_recent (turns for
 * the conversation, tool outputs for tools), archive_to inside detail/ or archive/.
 * The result says what went where, the tokens before and after, and asks the model to
 * update overview.md now (the next request carries a reminder).
 */
import { z } from 'zod';
import { compact, type CompactionDeps } from './compact.js';
import type { SessionEvent } from '../events.js';
import { PathRefusedError } from '../errors/pathRefused.js';
import { reservedPath } from '../memory/memoryRules.js';
import { defineTool, type Tool } from '../tools/tool.js';
import { percentOf } from '../prompt/promptBuilder.js';

export interface CompactHistoryHooks {
  emit(event: SessionEvent): void;
  /** Share of the window under which it compacts nothing (TurnSettings.compactHistoryFloor; 0: never refuses). */
  floor?: number;
}

const Parameters = z.object({
  target: z
    .enum(['conversation', 'tools', 'all'])
    // The same default as Session.compact (/compact): both kinds of old content.
    .default('all')
    .describe('conversation: old user/assistant turns; tools: old tool outputs (large, losing value); all: both'),
  strategy: z
    .enum(['archive', 'summarize'])
    .default('archive')
    .describe('archive: move verbatim to a detail/ file; summarize: replace by a structured summary (the verbatim text is archived too)'),
  keep_recent: z
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(5)
    .describe('Recent turns (conversation) or tool outputs (tools) to keep as they are'),
  archive_to: z
    .string()
    .optional()
    .describe('Where to archive, inside working-memory/detail/ or working-memory/archive/; default detail/compact-<time>.md'),
});

export function compactHistoryTool(deps: CompactionDeps, hooks: CompactHistoryHooks): Tool {
  return defineTool({
    name: 'compact_history',
    description:
      'Compact your conversation history and tool outputs to free context. Nothing is lost: what is compacted is archived verbatim ' +
      'in working-memory/ and replaced by a short note, a summary, or one-line stubs. Use it at the thresholds of the compression guide, ' +
      'then update working-memory/overview.md with anything you still need.',
    parameters: Parameters,
    execute: async (args, context) => {
      const { store } = deps;
      let archiveTo: string | undefined;
      if (args.archive_to !== undefined) {
        try {
          const rel = await store.resolvePath(args.archive_to);
          if (!/^(detail|archive)\//.test(rel)) {
            return {
              content: `Error: archive_to must be inside working-memory/detail/ or working-memory/archive/, got ${JSON.stringify(args.archive_to)}`,
              isError: true,
            };
          }
          const reserved = reservedPath(rel);
          if (reserved) return { content: `Error: archive_to refused: ${reserved}`, isError: true };
          archiveTo = rel;
        } catch (error) {
          if (error instanceof PathRefusedError) return { content: `Error: archive_to refused: ${error.message}`, isError: true };
          throw error;
        }
      }
      // After the arguments' checks: a bad archive_to is an error whatever the share.
      const unneeded = belowFloor(deps, hooks.floor ?? 0);
      if (unneeded) return unneeded;
      const turn = context.turn;
      const compacted = await compact(
        {
          kind: 'target',
          reason: 'llm',
          turn,
          activeTurn: turn,
          target: args.target,
          strategy: args.strategy,
          keepRecent: args.keep_recent,
          ...(archiveTo ? { archiveTo } : {}),
        },
        deps,
        context.signal,
        { emit: hooks.emit, request: context.request },
      );
      // Measured on the whole history, as the result text says.
      const { applied: result, tokensBefore: before, tokensAfter: after } = compacted;
      if (result.changed === 0) {
        const what =
          args.target === 'tools'
            ? `tool outputs beyond the last ${args.keep_recent} worth moving`
            : `turns before the last ${args.keep_recent}`;
        return `Nothing to compact: there are no ${what}. The history holds ${before} tokens.`;
      }
      const lines: string[] = [];
      if (result.archivedMessages) {
        const how = result.summary === 'written' ? 'replaced by a structured summary' : 'replaced by a short note';
        lines.push(
          `Compacted turns ${result.turns}: ${result.archivedMessages} messages archived verbatim to ${result.files[0]} and ${how}.`,
        );
      }
      if (result.stubbed) lines.push(`Moved ${result.stubbed} tool outputs to ${result.files[0]}; each is now a one-line stub.`);
      if (args.strategy === 'summarize' && result.stubbed) {
        lines.push(
          'Tool outputs are not summarised: strategy "summarize" applies to conversation turns, so each output was moved verbatim and replaced by a one-line stub instead.',
        );
      }
      if (args.strategy === 'summarize' && result.summary !== 'written' && result.archivedMessages) {
        lines.push(
          deps.summarizer
            ? 'The summarizer failed, so the turns were archived verbatim instead.'
            : 'No summarizer is configured, so the turns were archived verbatim instead.',
        );
      }
      lines.push(historyLine(before, after, deps));
      lines.push('Now update working-memory/overview.md with anything from the compacted part that you still need.');
      // The effect: the next request reminds the model to update its memory.
      return { content: lines.join('\n'), effects: { compacted: true } };
    },
  });
}

const count = (n: number): string => n.toLocaleString('en-US');

/**
 * Under the floor a compaction frees room no request needs, and the next request is sent,
 * and cached, again from where the history was cut (docs/design.md §2.4): the tool says so
 * instead, with the share that decided it. Not an error: nothing was asked that failed.
 */
function belowFloor(deps: CompactionDeps, floor: number): string | null {
  const last = deps.lastRequest?.();
  const window = deps.contextWindow;
  if (!(floor > 0) || !last || !window) return null;
  // On the share <context_meta> shows, rounded, as the compression guide's tiers are read.
  const [shown, below] = [percentOf(last.total, window), Math.round(floor * 100)];
  if (shown >= below) return null;
  // Short: it stays in the history that every later request carries.
  return `Not compacted: the request uses ${shown} % of the window; below ${below} % no compaction is needed.`;
}

/**
 * "History: before → after tokens", and the next request's share of the window, as
 * <context_meta> will show it. The last request less what the compaction took from its
 * history: what lay outside the request (older turns in phase 2) saves it nothing.
 */
function historyLine(before: number, after: number, deps: CompactionDeps): string {
  const last = deps.lastRequest?.();
  const window = deps.contextWindow;
  if (!last || !window) return `History: ${count(before)} → ${count(after)} tokens.`;
  const request = last.total - last.history + Math.min(last.history, after);
  return `History: ${count(before)} → ${count(after)} tokens; the request now uses ${percentOf(request, window)} % of the ${count(window)}-token window.`;
}
