/** A size as people read it in messages: 512 B, 4.2 KB, 1.0 MB (`digits` decimals for KB and MB). */
export function byteSize(bytes: number, digits = 1): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(digits)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(digits)} MB`;
}
