/**
 * vitest's global setup: one PostgreSQL for the whole run. When the environment names none
 * (WORKMEM_TEST_DATABASE_URL, as .ci/run sets it) and PostgreSQL is installed, one is started
 * here and named to the test files through that variable, so they share it as they share
 * CI's, instead of each file starting its own (an initdb and a start, seconds each). When
 * there is none to be had, one line for the whole run says that the Postgres tests are
 * skipped (each file skips its own quietly). The fault matrix still starts servers of its own.
 */
import { postgresAvailable, postgresBin, startPostgres } from './postgresServer.js';

export default async function setup(): Promise<(() => Promise<void>) | void> {
  if (process.env.WORKMEM_TEST_POSTGRES === 'off') {
    console.log('WORKMEM_TEST_POSTGRES=off: the Postgres halves of the store suites are skipped');
    return;
  }
  if (!postgresAvailable()) {
    console.log('PostgreSQL not found (no initdb on this machine, no WORKMEM_TEST_DATABASE_URL): the Postgres tests are skipped');
    return;
  }
  if (process.env.WORKMEM_TEST_DATABASE_URL) return;
  const server = await startPostgres(postgresBin()!);
  // The workers are started after the global setup, with this process's environment.
  process.env.WORKMEM_TEST_DATABASE_URL = server.url;
  return async () => {
    delete process.env.WORKMEM_TEST_DATABASE_URL;
    await server.stop();
  };
}
