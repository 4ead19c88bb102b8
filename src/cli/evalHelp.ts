/**
 * `workmem eval --help` and the command's flags: kept beside main.ts, which loads them before
 * a command is chosen (the command itself loads only when it runs).
 */
import type { ParseArgsConfig } from 'node:util';

/** What `workmem eval --help` prints. */
export const EVAL_USAGE = `workmem eval [--model <name> | --model testing:<profile>] [--base-url <url>] [--json] [--html <file>] [--resume | --overwrite]

Plays long conversations through your model under four arms — workmem auto (phase 1 →
2), workmem with the cache-aware settings, and two peers without workmem: the full
history, and a summary of all but the last 3 turns at 75 % of the window — and reports
per arm: accuracy by category, input tokens, cached share and bill (from the server's
usage), memory writes per 10 turns, reminders heeded, compactions by who made them, the
turn phase 2 began, failed requests and wall time. A markdown summary on stdout; a
progress bar on a terminal. See docs/eval.md.

  --model <name>              the model (env WORKMEM_MODEL); testing:<profile> plays it
                              offline with a behaviour profile: diligent, lazy,
                              forgetful, eager, sloppy or realistic (forgets in long
                              contexts, on a published benchmark's curve)
  --base-url <url>            any OpenAI-compatible endpoint (env OPENAI_BASE_URL; the
                              API key comes from OPENAI_API_KEY)
  --suite <full|small>        workmem's suite: 8 conversations of 60–400 turns in English
                              and Chinese (default), or 3 short ones
  --longmemeval <file>        a LongMemEval JSON file instead (downloaded by you)
  --limit <n>                 only the first n conversations
  --arms <a,b,…>              of workmem-auto, workmem-cache-aware, full-history,
                              summarise-75 (default all)
  --context-window <tokens>   the window every arm is held to (default 16384)
  --layout <default|seed|cheap>
                              workmem's arms under today's default layout, the seed's
                              (the default before 2026-12-07) or the cheap one
  --judge-model <name>        also grade each answer with this model (same endpoint)
  --json                      print the result as JSON instead of markdown
  --html <file>               write a self-contained page with the tables and plots
  --results <file>            where finished conversations are kept (default
                              <home>/eval/<model>-<suite>.jsonl)
  --resume                    play only the conversations the results file lacks
  --overwrite                 start the results file over (a file that holds
                              finished conversations is refused without it)
  --min-accuracy <share>      exit 1 unless every workmem arm reaches it (0.8 or 80%)
  --max-tokens-ratio <r>      exit 1 unless every workmem arm sends at most r times the
                              full history's input tokens
  --max-cost <dollars>        stop before this run would spend more (exit 1)
  --prices <file>             prices over the built-in table: {"model": {"input": 0.15,
                              "cached": 0.075, "output": 0.6}} in dollars per million tokens
  --home <dir>                where results are kept (env WORKMEM_HOME; default ~/.workmem)

Exit codes: 0 done and every gate passed, 1 a gate missed or the budget reached, 2 bad
usage, 130 interrupted (Ctrl-C; finished conversations are kept for --resume).`;

/** The flags of `workmem eval`. */
export const EVAL_OPTIONS: NonNullable<ParseArgsConfig['options']> = {
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'context-window': { type: 'string' },
  layout: { type: 'string' },
  home: { type: 'string' },
  suite: { type: 'string' },
  longmemeval: { type: 'string' },
  limit: { type: 'string' },
  arms: { type: 'string' },
  'judge-model': { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
  results: { type: 'string' },
  resume: { type: 'boolean' },
  overwrite: { type: 'boolean' },
  'min-accuracy': { type: 'string' },
  'max-tokens-ratio': { type: 'string' },
  'max-cost': { type: 'string' },
  prices: { type: 'string' },
};
