/** The tools of one session: workmem's own (memory, compaction, item memory) and the host's, with unique names. */
import { compactHistoryTool } from '../compaction/compactHistoryTool.js';
import type { CompactionDeps } from '../compaction/compact.js';
import type { SessionEvent } from '../events.js';
import type { PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { itemMemoryTools } from '../itemMemory/itemMemoryTools.js';
import type { Redact } from '../secrets/redact.js';
import { ConfigError } from '../settings/config.js';
import { memoryTools } from '../tools/memoryTools.js';
import type { Tool } from '../tools/tool.js';
import type { WorkingMemory } from '../memory/workingMemory.js';
import type { HeldWrites } from '../memory/heldWrites.js';
import type { SessionOptions } from './options.js';

export interface SessionTools {
  all: readonly Tool[];
  /** workmem's own tools: they read and write the memory itself, and only they report effects. */
  builtIn: ReadonlySet<string>;
}

export function sessionTools(parts: {
  memory: WorkingMemory;
  compaction: CompactionDeps;
  items: PersistentItemMemory | null;
  options: Pick<SessionOptions, 'tools' | 'itemMemory'>;
  writeQuotaBytes: number;
  /** What the model's writes hold, against the session's quota. */
  held: HeldWrites;
  redact: Redact;
  emit(event: SessionEvent): void;
}): SessionTools {
  const { compaction, items, options } = parts;
  const builtIn = [
    ...memoryTools(parts.memory, { writeQuotaBytes: parts.writeQuotaBytes, held: parts.held }),
    compactHistoryTool(compaction, { emit: parts.emit }),
  ];
  if (items)
    builtIn.push(
      ...itemMemoryTools(items.memory, {
        ...(options.itemMemory?.userId ? { userId: options.itemMemory.userId } : {}),
        afterChange: items.flush,
        redact: parts.redact,
      }),
    );
  const all = [...builtIn, ...(options.tools ?? [])];
  const names = new Set<string>();
  for (const tool of all) {
    if (names.has(tool.name)) throw new ConfigError(`two tools are named ${JSON.stringify(tool.name)}; tool names must be unique`);
    names.add(tool.name);
  }
  return { all, builtIn: new Set(builtIn.map((t) => t.name)) };
}
