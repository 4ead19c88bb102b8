/**
 * How long a test, a hook, or a wait inside one (a child's output, a screen, a server's
 * start) may take before it counts as hung. A guard against a hang, never a speed check: the
 * suite's outcome must not depend on the machine's load (it must pass at load 8 on 2 cores,
 * where a test takes five times as long as alone), so this is far past anything a test
 * takes there. A speed or memory target belongs in the benchmarks (test/bench/).
 */
export const HANG_MS = 20 * 60_000;
