/**
 * The host agent of the cache-economics bench's second profile: workmem embedded in an
 * agent with instructions and tools of its own, as services embed it: about 1.8k tokens
 * (our count) on top of workmem's own system prompt and tools (914), so a first request of
 * 3.1k tokens instead of 1.25k; the tools are never called by the bench's model.
 */
import { z } from 'zod';
import { defineTool, type Tool } from '../../src/tools/tool.js';

const RULES: [string, string[]][] = [
  [
    'Scope',
    [
      'Work only inside the repository you were opened in.',
      'Ask before touching generated files, vendored code or lock files.',
      'Never push, tag or publish; the user does that.',
    ],
  ],
  [
    'Reading code',
    [
      'Read the files a change touches before proposing it.',
      'Prefer search_code over guessing where a symbol lives.',
      'Quote the lines you rely on, with their paths and line numbers.',
    ],
  ],
  [
    'Changing code',
    [
      'Make the smallest change that fixes the problem.',
      'Keep the style of the file: naming, imports, comments, formatting.',
      'Apply every change with apply_patch; show the diff before you apply a large one.',
    ],
  ],
  [
    'Tests',
    [
      'Run the tests that cover a change with run_tests before you call it done.',
      'A failing test is reported with its name and the first lines of its output.',
      'Never weaken an assertion to make a test pass.',
    ],
  ],
  [
    'Answers',
    [
      'Answer in the language of the question.',
      'Lead with the result, then the reasons, then the open questions.',
      'Use code blocks for code and commands, and nothing else.',
    ],
  ],
  [
    'Safety',
    [
      'Do not print secrets, tokens or passwords found in files or output.',
      'Refuse commands that delete outside the repository.',
      'Say so when a request conflicts with these rules, and why.',
    ],
  ],
  [
    'Issues',
    [
      'File a problem you cannot fix now with open_issue, with steps to reproduce.',
      'Link the issue in your answer.',
      'Do not file duplicates: search the open issues first.',
    ],
  ],
  [
    'Working style',
    [
      'Plan multi-step work in a short list first.',
      'Report progress after each step that takes more than one tool call.',
      'Stop and ask when two readings of the request lead to different changes.',
    ],
  ],
];

/** The host's instructions: eight sections of rules, each explained, as agent prompts read. */
export const HOST_INSTRUCTIONS = [
  '# Repository assistant',
  'You help one developer with one repository. These rules come before any request.',
  ...RULES.map(
    ([title, rules], s) =>
      `## ${s + 1}. ${title}\n${rules
        .map(
          (rule, r) =>
            `${s + 1}.${r + 1} ${rule} This matters because the developer reviews every change you make, and a change that breaks the rule costs them more time than it saves; when in doubt, explain what you would do and wait for a yes.`,
        )
        .join('\n')}`,
  ),
].join('\n\n');

const path = z.string().describe('A path relative to the repository root, e.g. src/parser/lexer.ts');

export function hostTools(): Tool[] {
  const none = () => 'not available in the bench';
  return [
    defineTool({
      name: 'read_file',
      description:
        'Read a file of the repository. Returns numbered lines. Use offset and limit for files over 2,000 lines; binary files are refused.',
      parameters: z.object({
        path,
        offset: z.number().int().min(1).optional().describe('First line, 1-based'),
        limit: z.number().int().min(1).max(2000).optional(),
      }),
      execute: none,
    }),
    defineTool({
      name: 'search_code',
      description:
        'Search the repository with a regular expression (ripgrep syntax). Returns matching lines with paths and line numbers, at most 200; narrow with glob.',
      parameters: z.object({
        pattern: z.string(),
        glob: z.string().optional().describe('e.g. src/**/*.ts'),
        caseSensitive: z.boolean().default(false),
      }),
      execute: none,
    }),
    defineTool({
      name: 'list_dir',
      description:
        'List a directory of the repository, with sizes and the number of entries of each subdirectory. Ignored files (.gitignore) are left out.',
      parameters: z.object({ path, depth: z.number().int().min(1).max(4).default(1) }),
      execute: none,
    }),
    defineTool({
      name: 'apply_patch',
      description:
        'Apply a unified diff to the repository. Every hunk must apply cleanly; on a conflict nothing is written and the failing hunk is returned.',
      parameters: z.object({
        diff: z.string().describe('A unified diff with a/ and b/ prefixes'),
        message: z.string().describe('What the change does and why, one line'),
      }),
      execute: none,
    }),
    defineTool({
      name: 'run_tests',
      description:
        'Run the test suite or a part of it. Returns the summary and the output of failed tests, cut to 200 lines each. Times out after 10 minutes.',
      parameters: z.object({
        filter: z.string().optional().describe('A file or test name pattern'),
        updateSnapshots: z.boolean().default(false),
      }),
      execute: none,
    }),
    defineTool({
      name: 'open_issue',
      description:
        'File an issue in the repository tracker. Returns its number and link. Search the open issues first; a duplicate is refused.',
      parameters: z.object({
        title: z.string().max(120),
        body: z.string().describe('Steps to reproduce, what happened, what was expected'),
        labels: z.array(z.enum(['bug', 'enhancement', 'question', 'docs'])).default([]),
      }),
      execute: none,
    }),
  ];
}
