/**
 * The PostgreSQL store: several service processes sharing one database. Needs the optional peer
 * dependency `pg` (the store takes a `pg.Pool`, or creates one from a connection string).
 */

export type { PostgresPoolOptions, PostgresStoreOptions, PostgresUrlOptions } from './store.js'
export { postgresStore } from './store.js'
