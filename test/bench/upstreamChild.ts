/**
 * The concurrent bench's model for its long case, out of the bench's process (as a hosted
 * model is): a prompt of a long conversation parsed by the model is no time of workmem's,
 * nor of the other session's client beside it. Answers `argv[2]` at once; prints its base
 * URL; stops when stdin ends.
 */
import { startTestServer } from '../../src/testing/index.js';

const server = await startTestServer({
  policy: () => ({ content: process.argv[2]! }),
  promptCaching: 'off',
  chunkChars: 64,
  reportUsage: false,
});
process.stdout.write(`${server.baseURL}\n`);
process.stdin.on('data', () => {});
process.stdin.on('end', () => void server.close().then(() => process.exit(0)));
