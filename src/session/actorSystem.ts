/**
 * xstate's actor system (5.x) keeps every actor it starts in a Map that nothing reads: each
 * child is added when it starts and deleted when it stops. That churn makes V8 rehash the
 * Map's table every few actors, and V8 links each retired table to the one that replaced
 * it. Once a retired table has been promoted to the old generation, every later table, and
 * through it every later actor of the session with its snapshot, context and events, stays
 * reachable for young-generation collections until the next full one. At 10k messages that
 * kept ~2 MB alive per scavenge (pauses of ~4 ms: the p99). The session's system skips the
 * registration; deleting a key that is absent changes nothing.
 */

/** Stop `system` (an xstate actor system, before its root starts) keeping a Map of its actors. */
export function skipActorRegistry(system: unknown): void {
  const internals = system as { _register?: unknown };
  // Only the registration the churn comes from; without it (another xstate) there is nothing to do.
  if (typeof internals._register === 'function') internals._register = (sessionId: string) => sessionId;
}
