/**
 * The results file that makes a run resumable: JSON lines, a header naming the run (model,
 * suite, window, arms, judge, and a fingerprint of all of it and of the conversations), then
 * one line per finished conversation, appended as each finishes. `--resume` reads the
 * conversations already there and plays only the others; a header of another run is refused,
 * and a line cut short by a kill is dropped.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../settings/config.js';
import type { ConversationResult } from './results.js';
import type { Conversation } from './suite.js';

/** What a run is: resumed results must come from the same. */
export interface RunIdentity {
  model: string;
  suite: string;
  contextWindow: number;
  arms: string[];
  judge: string | null;
}

interface Header extends RunIdentity {
  workmemEval: 1;
  fingerprint: string;
}

/** A fingerprint of a run: its identity and its conversations' text. */
export function fingerprintOf(identity: RunIdentity, conversations: readonly Conversation[]): string {
  const hash = createHash('sha256').update(JSON.stringify(identity));
  for (const c of conversations) hash.update(JSON.stringify(c));
  return hash.digest('hex').slice(0, 16);
}

/** An open results file: the conversations it already holds, and where new ones go. */
export interface ResultsFile {
  readonly path: string;
  readonly done: ConversationResult[];
  append(result: ConversationResult): void;
}

/** Opens `path` for this run: resumed (its finished conversations kept) or anew (emptied). */
export function openResultsFile(path: string, identity: RunIdentity, fingerprint: string, resume: boolean): ResultsFile {
  const header: Header = { workmemEval: 1, ...identity, fingerprint };
  let done: ConversationResult[] = [];
  if (resume) done = readDone(path, fingerprint);
  mkdirSync(dirname(path), { recursive: true });
  // Written anew either way, so that a line cut short by a kill goes.
  writeFileSync(path, [header, ...done].map((line) => `${JSON.stringify(line)}\n`).join(''));
  return {
    path,
    done,
    append: (result) => appendFileSync(path, `${JSON.stringify(result)}\n`),
  };
}

function readDone(path: string, fingerprint: string): ConversationResult[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ConfigError(`cannot read the results file ${path}: ${(error as Error).message}`);
  }
  const lines = text.split('\n').filter((l) => l.trim());
  let header: Partial<Header> | null = null;
  try {
    header = JSON.parse(lines[0] ?? 'null') as Partial<Header>;
  } catch {
    header = null;
  }
  if (header?.workmemEval !== 1) throw new ConfigError(`${path} is not a workmem eval results file; run without --resume to start over`);
  if (header.fingerprint !== fingerprint)
    throw new ConfigError(
      `${path} holds another run (model ${header.model}, suite ${header.suite}, window ${header.contextWindow}, arms ${header.arms?.join(',')}); run without --resume to start over, or give another --results file`,
    );
  const done: ConversationResult[] = [];
  for (const line of lines.slice(1)) {
    try {
      done.push(JSON.parse(line) as ConversationResult);
    } catch {
      break; // the last line, cut short by a kill
    }
  }
  return done;
}
