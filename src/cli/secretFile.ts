/**
 * A secret kept in a file (--database-url-file, --token-file): its first line that is not
 * blank. A file other local users can read gives the secret away as a flag would, so it is
 * used with a warning that says how to close it, as ssh does for a private key. It is not
 * refused: a secret mounted by a container runtime or an orchestrator is often 0644 where no
 * other user exists, and refusing it would break those deployments for nothing.
 */
import { readFileSync, statSync } from 'node:fs';
import { UsageError } from './usageError.js';

/** The file's first non-blank line; `warn` is told when the file is readable by its group or others. */
export function readSecretFile(path: string, flag: string, warn: (message: string) => void): string {
  let text: string;
  let mode: number;
  try {
    text = readFileSync(path, 'utf8');
    mode = statSync(path).mode & 0o777;
  } catch (error) {
    throw new UsageError(
      `${flag} ${JSON.stringify(path)} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  if (mode & 0o077)
    warn(
      `${flag} ${path} can be read by ${mode & 0o004 ? 'every local user' : 'its group'} (mode ${mode.toString(8).padStart(4, '0')}): ` +
        `chmod 600 ${path}, as ssh asks of a private key`,
    );
  return text.split(/\r?\n/).find((line) => line.trim()) ?? '';
}
