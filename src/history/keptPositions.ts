/**
 * A host's message list with some messages left out (its system messages, which are its
 * instructions), read by index without a copy: a host hands over its whole conversation on
 * every call. When the left-out ones open the list, as they mostly do, kept message i is at
 * i + their count; else each kept message's position is listed once.
 */
export interface KeptPositions {
  readonly length: number;
  /** Where kept message i is in the list. */
  at(i: number): number;
}

/** `leftOut`: the positions left out, in order. */
export function keptPositions(length: number, leftOut: readonly number[]): KeptPositions {
  if (leftOut.every((position, k) => position === k)) {
    const offset = leftOut.length;
    return { length: length - offset, at: (i) => i + offset };
  }
  const out = new Set(leftOut);
  const kept: number[] = [];
  for (let p = 0; p < length; p++) if (!out.has(p)) kept.push(p);
  return { length: kept.length, at: (i) => kept[i]! };
}
