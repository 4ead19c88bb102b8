/**
 * The disk threads start in any process: one whose eval input is ESM (`node --input-type=module
 * -e`, as scripts and the reliability suite's writers run) writes and syncs through them too.
 * Before, the threads inherited the flag, read their own source as ESM and died on `require`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { builtFile } from '../reliability/built.js';

describe('disk threads under --input-type=module', () => {
  it('write and sync a file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'workmem-threads-')), 'out.txt');
    const script = `
      import { openSync, closeSync } from 'node:fs';
      import { diskThreads } from '${pathToFileURL(builtFile('src/storage/diskIO.js')).href}';
      const io = diskThreads({ threads: 1 });
      const fd = openSync(${JSON.stringify(file)}, 'w');
      await io.write(fd, Buffer.from('written on a disk thread\\n'), { sync: 'data' });
      closeSync(fd);
      console.log('syncs', io.syncs);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('written on a disk thread\n');
  });
});
