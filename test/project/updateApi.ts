/** `npm run api`: writes each entry's API report into api/ (after a deliberate change to the public surface). */
import { apiReport, ENTRIES } from './apiReport.js';

for (const entry of Object.keys(ENTRIES)) {
  const outcome = apiReport(entry, true);
  console.log(`${entry}: ${outcome.changed ? 'updated' : 'unchanged'}${outcome.errors.length ? `\n  ${outcome.errors.join('\n  ')}` : ''}`);
}
