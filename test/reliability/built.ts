import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A file of the build (dist/), found from the package root whether we run from the sources or dist. */
export function builtFile(path: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  const file = join(dir, 'dist', path);
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first`);
  return file;
}
