/**
 * What a provider sends beside an answer's tool calls that the session's log cannot hold,
 * and that the provider needs back beside those calls while their tool loop runs: Anthropic's
 * thinking blocks (with thinking on, the assistant message whose calls a request answers must
 * open with them), OpenAI's reasoning items (encrypted, for a client that keeps no state
 * upstream). They are kept by the ids of the calls they came with — the client's own copies
 * from its request, and this exchange's from the upstream's answers — and sent upstream again
 * before those calls, whatever workmem did to the history around them.
 */
export class CallCompanions<T> {
  private readonly byCall = new Map<string, readonly T[]>();

  /** `items` came with the calls `callIds` (with none, they are dropped: no request needs them back). */
  keep(callIds: readonly string[], items: readonly T[]): void {
    if (!items.length) return;
    for (const id of callIds) this.byCall.set(id, items);
  }

  /** What came with these calls (with the first of them that has any); empty when nothing did. */
  of(callIds: readonly string[]): readonly T[] {
    for (const id of callIds) {
      const items = this.byCall.get(id);
      if (items) return items;
    }
    return [];
  }
}
