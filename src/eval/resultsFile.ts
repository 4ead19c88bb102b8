/**
 * The results file that makes a run resumable: JSON lines, a header naming the run (model,
 * suite, window, arms, judge, and a fingerprint of all of it and of the conversations), then
 * one line per finished conversation, appended as each finishes. `--resume` reads the
 * conversations already there and plays only the others; a header of another run is refused,
 * so is any line that is not one of the run's conversations, whole and once, and a line cut
 * short by a kill (the last) is dropped. A run anew does not empty finished conversations
 * without being told to (--overwrite).
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
  /** The workmem arms' settings over the defaults, when given. */
  settings?: Record<string, unknown>;
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

/** How a run opens its results file: resumed, or anew (`overwrite` allows replacing finished conversations). */
export interface OpenMode {
  resume: boolean;
  overwrite?: boolean;
  /** The run's conversations: a resumed line must name one of them, once. */
  conversations: readonly string[];
}

/**
 * Opens `path` for this run: resumed (its finished conversations kept, every line checked) or
 * anew (emptied). Finished conversations of an earlier run are never emptied without a word:
 * anew, a file that holds any is refused unless `overwrite` says to replace it.
 */
export function openResultsFile(path: string, identity: RunIdentity, fingerprint: string, mode: OpenMode): ResultsFile {
  const header: Header = { workmemEval: 1, ...identity, fingerprint };
  let done: ConversationResult[] = [];
  if (mode.resume) done = readDone(path, fingerprint, identity, mode.conversations);
  else if (!mode.overwrite) refuseFinished(path);
  mkdirSync(dirname(path), { recursive: true });
  // Written anew either way, so that a line cut short by a kill goes.
  writeFileSync(path, [header, ...done].map((line) => `${JSON.stringify(line)}\n`).join(''));
  return {
    path,
    done,
    append: (result) => appendFileSync(path, `${JSON.stringify(result)}\n`),
  };
}

/** A results file that holds finished conversations is not emptied silently. */
function refuseFinished(path: string): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return; // none there (or unreadable: writing it will say so)
  }
  const finished = text.split('\n').filter((l) => l.trim()).length - 1;
  if (finished > 0)
    throw new ConfigError(
      `${path} holds ${finished} finished conversation${finished === 1 ? '' : 's'} of an earlier run: --resume goes on from them, --overwrite starts over, --results <file> keeps them`,
    );
}

function readDone(path: string, fingerprint: string, identity: RunIdentity, conversations: readonly string[]): ConversationResult[] {
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
  for (const [i, line] of lines.slice(1).entries()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      if (i === lines.length - 2) break; // the last line, cut short by a kill
      throw badLine(path, i + 2, 'is not JSON');
    }
    const problem = lineProblem(parsed, identity, conversations, done);
    if (problem) throw badLine(path, i + 2, problem);
    done.push(parsed as ConversationResult);
  }
  return done;
}

/**
 * What is wrong with a finished conversation's line, or null: resumed figures are computed
 * from these lines as they are, so a line that is not one of this run's conversations, whole
 * and once, stops the run before anything is computed.
 */
function lineProblem(
  line: unknown,
  identity: RunIdentity,
  conversations: readonly string[],
  done: readonly ConversationResult[],
): string | null {
  if (typeof line !== 'object' || line === null || Array.isArray(line))
    return `is ${line === null ? 'null' : Array.isArray(line) ? 'an array' : `a ${typeof line}`}, not a conversation's result`;
  const { id, arms, turns } = line as Partial<ConversationResult>;
  if (typeof id !== 'string' || !conversations.includes(id)) return `names no conversation of this run (id ${JSON.stringify(id)})`;
  if (done.some((d) => d.id === id)) return `lists conversation ${id} a second time`;
  if (typeof turns !== 'number' || !Array.isArray(arms))
    return `has no turns count or arms list (arms ${JSON.stringify(arms)?.slice(0, 40)})`;
  const names = arms.map((a) => (typeof a === 'object' && a !== null ? (a as { arm?: unknown }).arm : undefined));
  if (JSON.stringify(names) !== JSON.stringify(identity.arms))
    return `has the arms ${JSON.stringify(names).slice(0, 80)}, not this run's ${identity.arms.join(',')}`;
  return null;
}

function badLine(path: string, line: number, problem: string): ConfigError {
  return new ConfigError(
    `${path}, line ${line}, ${problem}: nothing was computed; fix or remove the line, or run without --resume to start over`,
  );
}
