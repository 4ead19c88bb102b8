/**
 * Process warnings raised in a test file (process.emitWarning: a listener leak, workmem's
 * own reports without a place to go) reach the reporters as the test's console output, so
 * test/quietReporter.ts counts them; Node prints them too, as always. Once per process,
 * however many test files it runs.
 */
const LISTENING = Symbol.for('workmem.test.warningsAsLogs');
const holder = globalThis as { [LISTENING]?: true };
if (!holder[LISTENING]) {
  holder[LISTENING] = true;
  process.on('warning', (warning) => console.warn(`process warning: ${warning.name}: ${warning.message}`));
}
