/**
 * remember / recall / forget: the model's tools for item memory (docs/design.md §8).
 */
import { z } from 'zod';
import { ItemMemoryError, type ItemMemory } from './itemMemory.js';
import { defineTool, type Tool, type ToolOutput } from '../tools/tool.js';

const RememberParameters = z.object({
  content: z.string().describe('The fact, in one sentence'),
  importance: z.number().min(0).max(1).default(0.5).describe('0 (trivia) to 1 (essential)'),
});
const RecallParameters = z.object({ query: z.string(), limit: z.number().int().min(1).max(50).default(5) });
const ForgetParameters = z.object({
  id: z.string().optional(),
  strategy: z.enum(['importance_based', 'time_based', 'capacity_based']).optional(),
  threshold: z.number().min(0).optional(),
  max_age_days: z.number().min(0).optional(),
});

export function itemMemoryTools(
  memory: ItemMemory,
  options: { userId?: string; afterChange?: () => Promise<void>; redact?: (text: string) => string } = {},
): Tool[] {
  const guarded = async (run: () => string): Promise<ToolOutput> => {
    try {
      const text = run();
      await options.afterChange?.();
      return text;
    } catch (error) {
      if (error instanceof ItemMemoryError) return { content: `Error: ${error.message}`, isError: true };
      throw error;
    }
  };
  const userId = options.userId;
  return [
    defineTool({
      name: 'remember',
      description:
        'Store a small fact in short-term item memory, with an importance from 0 to 1. It fades with time, expires after a while, and the least important items make room for new ones.',
      parameters: RememberParameters,
      execute: ({ content, importance }) =>
        guarded(() => {
          // Stored in the state store and injected later: keys the model repeats are masked like everywhere else.
          const item = memory.add({
            content: options.redact ? options.redact(content) : content,
            importance,
            ...(userId ? { userId } : {}),
          });
          return `Remembered (${item.id}, importance ${item.importance}, ${item.tokens} tokens). ${memory.size} of ${memory.maxCapacity} items in memory.`;
        }),
    }),
    defineTool({
      name: 'recall',
      description: 'Find remembered items relevant to a query (English or Chinese), best first.',
      parameters: RecallParameters,
      execute: ({ query, limit }) =>
        guarded(() => {
          const found = memory.retrieve(query, { limit, ...(userId ? { userId } : {}) });
          if (!found.length) return 'Nothing relevant is remembered.';
          return found
            .map((r) => `- [${r.item.id}] ${r.item.content} (importance ${r.item.importance}, score ${r.score.toFixed(3)})`)
            .join('\n');
        }),
    }),
    defineTool({
      name: 'forget',
      description:
        'Forget remembered items: one by id, or by strategy: importance_based (below threshold), time_based (older than max_age_days), capacity_based (keep only the threshold most important).',
      parameters: ForgetParameters,
      execute: ({ id, strategy, threshold, max_age_days }) =>
        guarded(() => {
          if (id !== undefined) {
            const item = memory.forgetItem(id, userId);
            return item ? `Forgot ${id}: ${item.content}` : `No remembered item has the id ${id}.`;
          }
          if (!strategy) throw new ItemMemoryError('give an id or a strategy');
          const removed = memory.forget({ strategy, threshold, maxAgeDays: max_age_days, ...(userId ? { userId } : {}) });
          const left = userId ? memory.items().filter((i) => i.userId === userId).length : memory.size;
          return `Forgot ${removed.length} item${removed.length === 1 ? '' : 's'}; ${left} left.`;
        }),
    }),
  ];
}
