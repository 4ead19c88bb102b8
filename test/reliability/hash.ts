import { createHash } from 'node:crypto';

/** A short content hash, shared by the crash child and the harness. */
export const sha = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);
