/** How a session's record is created and opened (sessionRecord.ts). */
import type { MemoryLanguage } from '../memory/memoryTemplate.js';
import type { Redact } from '../storage/sessionStore.js';

export interface RecordCreateOptions {
  cwd: string;
  id?: string;
  name?: string | null;
  language?: MemoryLanguage;
  model?: string | null;
  now?: () => number;
  /** Applied to every line and file written (API keys out; see redact.ts). */
  redact?: Redact;
}

export interface RecordOpenOptions {
  now?: () => number;
  redact?: Redact;
  /** A calibration beyond the window cannot be real: it is rebuilt as 0. */
  contextWindow?: number;
}
