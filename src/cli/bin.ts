#!/usr/bin/env node
/** The `workmem` executable: runs the command line with the process's streams (main.ts has no side effects, for tests). */
// Before anything else loads: V8's settings for workmem's own processes.
import './engineFlags.js';
import { describeError, runCli } from './main.js';
import { hideDatabaseUrl } from './processTitle.js';

// First of all: a password given as --database-url leaves the command line other users can read.
hideDatabaseUrl(process.argv.slice(2));

runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`workmem: ${describeError(error)}\n`);
    process.exitCode = 1;
  },
);
