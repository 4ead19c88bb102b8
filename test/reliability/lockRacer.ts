/**
 * A process that races for session locks on command, for the lock family: it stays up
 * for many trials (a process per attempt would make 500 trials take minutes).
 *
 * stdin, one command a line:
 *   go <dir> <at ms> [<heartbeat ms> <stale ms>]   at that wall-clock time, try to take
 *                      the lock of <dir> (with that heartbeat, when given)
 *   release            release the lock taken, if any
 * stdout: `got`, `refused <message>` or `error <message>` after go; `released` after release.
 */
import { createInterface } from 'node:readline';
import { SessionLock } from '../../src/storage/sessionLock.js';

let lock: SessionLock | null = null;
const say = (line: string): void => void process.stdout.write(`${line}\n`);

for await (const line of createInterface({ input: process.stdin })) {
  const [command, dir, at, heartbeatMs, staleMs] = line.split(' ');
  if (command === 'go') {
    // Sleep most of the wait, spin the last milliseconds so the racers start together.
    const wait = Number(at) - Date.now();
    if (wait > 3) await new Promise((resolve) => setTimeout(resolve, wait - 3));
    while (Date.now() < Number(at));
    try {
      lock = SessionLock.acquire(dir!, heartbeatMs ? { heartbeatMs: Number(heartbeatMs), staleMs: Number(staleMs) } : undefined);
      say('got');
    } catch (error) {
      say(`${(error as Error).name === 'SessionInUseError' ? 'refused' : 'error'} ${(error as Error).message}`);
    }
  } else if (command === 'release') {
    lock?.release();
    lock = null;
    say('released');
  }
}
