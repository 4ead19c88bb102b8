/**
 * V8 settings for workmem's own processes (the CLI: `workmem chat`, `serve`, `eval`), set
 * before anything else is loaded. Allocation-site pretenuring off: V8 comes to allocate
 * xstate's short-lived actors and snapshots straight in the old generation, where they die
 * young but keep the young objects they point at through every scavenge until a
 * mark-compact; off, a scavenge copies about half as much and the slowest requests are
 * faster (docs/performance.md). A library leaves its host's engine alone: a host passes
 * the flag to node itself (NODE_OPTIONS does not take it) or sets it as this file does.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--no-allocation-site-pretenuring');
