/**
 * Loaded into a `workmem serve` process the concurrent bench starts (`node --import`): the
 * process's event-loop delay, syncs, CPU and heap, asked for over the IPC channel. The
 * process is the built CLI, unchanged; this only watches it.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

// The CLI's own module (the same file, so the same instance): its count of syncs; none in a
// checkout from before it (the bench run against older code).
const syncsInProcess = await import(process.env.WORKMEM_BENCH_DISK_IO!).then(
  (m: { syncsInProcess(): number }) => m.syncsInProcess,
  () => () => NaN,
);
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let since = { syncs: 0, cpu: process.cpuUsage(), at: performance.now() };
const gc = (globalThis as { gc?: () => void }).gc;

process.on('message', (message: { ask: 'reset' | 'report' | 'heap' }) => {
  if (message.ask === 'reset') {
    delay.reset();
    since = { syncs: syncsInProcess(), cpu: process.cpuUsage(), at: performance.now() };
    process.send!({ ok: true });
  } else if (message.ask === 'heap') {
    gc?.();
    process.send!({ heapUsed: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss });
  } else {
    const cpu = process.cpuUsage(since.cpu);
    process.send!({
      delayP50: delay.percentile(50) / 1e6,
      delayP99: delay.percentile(99) / 1e6,
      delayMax: delay.max / 1e6,
      syncs: syncsInProcess() - since.syncs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      wallMs: performance.now() - since.at,
    });
  }
});
process.channel?.unref();
