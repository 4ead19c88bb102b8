/**
 * The tools of one session: workmem's own (memory, compaction, item memory) and the host's.
 * workmem's are sent under the names toolNaming.ts gives them beside the host's tools: their
 * own names, or all of them prefixed when a host tool has one of those names. A Session's
 * host tools are known when it opens; a host loop's (the middleware, the proxy) come with
 * each call, and the names follow them (`nameBeside`).
 */
import { compactHistoryTool } from '../compaction/compactHistoryTool.js';
import type { CompactionDeps } from '../compaction/compact.js';
import type { SessionEvent } from '../events.js';
import type { PersistentItemMemory } from '../itemMemory/itemMemoryStore.js';
import { itemMemoryTools } from '../itemMemory/itemMemoryTools.js';
import type { Redact } from '../secrets/redact.js';
import { ConfigError } from '../settings/config.js';
import { memoryTools } from '../tools/memoryTools.js';
import type { Tool } from '../tools/tool.js';
import { ownNameOf, ownToolPrefix } from '../tools/toolNaming.js';
import { OwnToolNaming } from '../history/hostLine.js';
import type { WorkingMemory } from '../memory/workingMemory.js';
import type { HeldWrites } from '../memory/heldWrites.js';
import type { SessionOptions } from './options.js';

export class SessionTools {
  /** workmem's own tools under their own names. */
  readonly own: readonly Tool[];
  private readonly ownNames: ReadonlySet<string>;
  private readonly host: readonly Tool[];
  private current = '';
  private sent: Tool[] = [];
  private byName = new Map<string, Tool>();
  private names = OwnToolNaming.DEFAULT;

  constructor(own: readonly Tool[], host: readonly Tool[]) {
    this.own = own;
    this.host = host;
    this.ownNames = new Set(own.map((t) => t.name));
    const names = new Set<string>();
    for (const tool of host) {
      if (names.has(tool.name)) throw new ConfigError(`two tools are named ${JSON.stringify(tool.name)}; tool names must be unique`);
      names.add(tool.name);
    }
    this.rename(ownToolPrefix([...this.ownNames], names));
  }

  /** The prefix workmem's tools are sent with now ('' for their own names). */
  get prefix(): string {
    return this.current;
  }

  /** Which calls are workmem's under the names sent now (the same object while they do not change). */
  get naming(): OwnToolNaming {
    return this.names;
  }

  /** Every tool as sent now: workmem's own, then the host's (a Session's). */
  get all(): readonly Tool[] {
    return this.sent;
  }

  /** The tool sent under `name`. */
  named(name: string): Tool | undefined {
    return this.byName.get(name);
  }

  /** Whether `name` is one of workmem's own tools as sent now (its effects are acted on; its output is the memory's own). */
  isOwn(name: string): boolean {
    return ownNameOf(name, this.current, this.ownNames) !== null;
  }

  /** The name one of workmem's own tools is sent under now. */
  sentName(own: string): string {
    return this.current + own;
  }

  /** Names workmem's tools beside a host loop's tools (its call's): the prefix they take now. */
  nameBeside(hostNames: Iterable<string>): string {
    const prefix = ownToolPrefix([...this.ownNames], hostNames);
    if (prefix !== this.current) this.rename(prefix);
    return prefix;
  }

  private rename(prefix: string): void {
    this.current = prefix;
    this.names = new OwnToolNaming(prefix, this.ownNames);
    const own = prefix ? this.own.map((t) => renamed(t, prefix + t.name)) : [...this.own];
    this.sent = [...own, ...this.host];
    this.byName = new Map(this.sent.map((t) => [t.name, t]));
  }
}

/** A tool under another name (its schema and what it does unchanged). */
function renamed(tool: Tool, name: string): Tool {
  return { ...tool, name, spec: { ...tool.spec, name } };
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
  /** Share of the window under which compact_history compacts nothing (TurnSettings). */
  compactHistoryFloor: number;
}): SessionTools {
  const { compaction, items, options } = parts;
  // Their texts name the tools as sent (a result that says "call read with offset=…").
  let tools: SessionTools | null = null;
  const sentName = (own: string): string => tools?.sentName(own) ?? own;
  const own = [
    ...memoryTools(parts.memory, { writeQuotaBytes: parts.writeQuotaBytes, held: parts.held, sentName }),
    compactHistoryTool(compaction, { emit: parts.emit, floor: parts.compactHistoryFloor }),
  ];
  if (items)
    own.push(
      ...itemMemoryTools(items.memory, {
        ...(options.itemMemory?.userId ? { userId: options.itemMemory.userId } : {}),
        afterChange: items.flush,
        redact: parts.redact,
      }),
    );
  tools = new SessionTools(own, options.tools ?? []);
  return tools;
}
