/**
 * vitest's global setup: when there is no PostgreSQL to test against, one line for the
 * whole run says that the Postgres tests are skipped (each file skips its own quietly).
 */
import { postgresAvailable } from './postgresServer.js';

export default function setup(): void {
  if (process.env.WORKMEM_TEST_POSTGRES === 'off')
    console.log('WORKMEM_TEST_POSTGRES=off: the Postgres halves of the store suites are skipped');
  else if (!postgresAvailable())
    console.log('PostgreSQL not found (no initdb on this machine, no WORKMEM_TEST_DATABASE_URL): the Postgres tests are skipped');
}
