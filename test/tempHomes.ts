/**
 * Temporary homes for the tests, each removed after the file that made it. The removal is
 * registered for every file by the setup file test/project/tempHomeCleanup.ts, not here: in
 * a project whose files share one module cache (`isolate: false`) a hook at this module's
 * top level would be registered for the first file that imports it only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const homes: string[] = [];

export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'workmem-test-'));
  homes.push(home);
  return home;
}

/** Remove every home made since the last call. */
export function removeTempHomes(): void {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
}
