/**
 * workmem/postgres: sessions in PostgreSQL (log, working memory, meta, state and trace),
 * any instance serving any session under a fenced lease. A separate entry, so that `pg`
 * (an optional peer) loads only here.
 */
export { postgresStore, type PostgresStoreOptions } from './postgresStore.js';
export { SchemaVersionError } from './schema.js';
