/**
 * The child of benchmarks.ts's orchestration rows as workmem's own processes run: the CLI's
 * V8 settings first (src/cli/engineFlags.ts), then the same measurement; its rows as JSON.
 */
import '../../src/cli/engineFlags.js';
import { orchestrationOverhead, type Scale } from './benchmarks.js';

const scale = JSON.parse(process.argv[2]!) as Scale;
process.stdout.write(JSON.stringify(await orchestrationOverhead(scale)));
