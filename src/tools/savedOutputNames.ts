/**
 * Names for saved full texts, `<n>-turn<turn><suffix>`: n counts up per session, from past
 * the highest number already in the folder (so a restart reuses none), because call ids
 * repeat (servers that omit them get call_0 in every response) and are the model's to choose.
 */
export class SavedOutputNames {
  private next: Promise<number> | null = null;

  constructor(
    /** The names already in the folder (read once, through the session's memory files). */
    private readonly existing: () => Promise<readonly string[]>,
    /** The folder as written in names (relative to working-memory/). */
    private readonly prefix: string,
  ) {}

  /** The next name; calls made at once get distinct numbers, in the order they were made. */
  name(turn: number, suffix: string): Promise<string> {
    const previous = this.next ?? this.existing().then(highestNumber, () => 0);
    const mine = previous.then((n) => n + 1);
    this.next = mine;
    return mine.then((n) => `${this.prefix}/${n}-turn${turn}${suffix}`);
  }
}

function highestNumber(names: readonly string[]): number {
  let highest = 0;
  for (const name of names) {
    const n = /^(\d{1,15})-/.exec(name);
    if (n) highest = Math.max(highest, Number(n[1]));
  }
  return highest;
}
