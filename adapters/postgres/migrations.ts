import type { Pool, PoolClient } from 'pg'
import { clientKeyTablesSql } from './client-keys.js'
import { documentTablesSql } from './documents.js'
import { lockKey, quoteIdent } from './keys.js'
import { logCountByStatementSql, logCountSql, logTablesSql } from './logs.js'
import { outboxCountByStatementSql, webhookTablesSql } from './outbox.js'
import { proxyTablesSql } from './proxies.js'
import {
  countsSql,
  countsTunedSql,
  countWithinSql,
  stagedCountSql,
  tablesSql,
  tokenSyncByKeySql,
} from './schema.js'
import { tokenHeadsKeptSql, tokenHeadsSql } from './token-heads.js'
import { tokenIntentTablesSql } from './token-intents.js'
import { writeFunctionSql } from './write-function.js'

/** One schema change: applied once, in version order, and recorded in `tokenvault_migrations`. */
export interface Migration {
  version: number
  name: string
  /** The DDL, given the quoted schema name. */
  sql(schema: string): string
}

/**
 * The schema's steps. Version 1 is the whole schema: the tables, indexes and triggers
 * (`tablesSql`), the per-tenant record counts (`countsSql`) and the write function
 * (`writeFunctionSql`). A later change adds a step with the next version (a change to `tv_write`
 * too: `CREATE OR REPLACE FUNCTION` in that step); `migrate` applies the steps a schema lacks.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: (s) => tablesSql(s) + countsSql(s) + writeFunctionSql(s),
  },
  {
    // Pre-configured proxies: their table and index, and the write function that knows their ops.
    version: 2,
    name: 'proxies',
    sql: (s) => proxyTablesSql(s) + writeFunctionSql(s),
  },
  {
    // The audit log: its table and indexes, and the write function that knows its ops.
    version: 3,
    name: 'audit log',
    sql: (s) => logTablesSql(s) + writeFunctionSql(s),
  },
  {
    // Webhooks and the outbox: their tables, indexes and count triggers, and the write function
    // that knows their ops and guards.
    version: 4,
    name: 'webhooks and outbox',
    sql: (s) => webhookTablesSql(s) + writeFunctionSql(s),
  },
  {
    // Data-key lifecycle: no new table (a tenant's key versions live on its record); the write
    // function learns the `tenant.unchanged` guard its key changes are made under.
    version: 5,
    name: 'tenant.unchanged guard for data-key versions',
    sql: (s) => writeFunctionSql(s),
  },
  {
    // Per-tenant bounds kept in the write: the write function learns the `count.within` guard.
    version: 7,
    name: 'count.within guard for per-tenant bounds',
    sql: (s) => writeFunctionSql(s),
  },
  {
    // The audit log's per-tenant count of entries, for its bound (`maxLogEntriesPerTenant`).
    version: 8,
    name: 'audit log entry count',
    sql: (s) => logCountSql(s),
  },
  {
    // Token intents: their table and expiry index, and the write function that knows their ops.
    version: 9,
    name: 'token intents',
    sql: (s) => tokenIntentTablesSql(s) + writeFunctionSql(s),
  },
  {
    // Documents: their heads and chunks tables, and the write function that knows their ops.
    version: 10,
    name: 'documents',
    sql: (s) => documentTablesSql(s) + writeFunctionSql(s),
  },
  {
    // Client encryption keys: their table and index, and the write function that knows their ops.
    version: 11,
    name: 'client encryption keys',
    sql: (s) => clientKeyTablesSql(s) + writeFunctionSql(s),
  },
  {
    // The write function learns the `token_intent.present` guard a token intent is converted under.
    version: 12,
    name: 'token_intent.present guard',
    sql: (s) => writeFunctionSql(s),
  },
  {
    // The write function learns the `proxy.unchanged` guard the key lifecycle re-seals a proxy under.
    version: 13,
    name: 'proxy.unchanged guard',
    sql: (s) => writeFunctionSql(s),
  },
  {
    // A token's update or delete finds its old terms by the primary key, not a scan of every term.
    version: 14,
    name: 'token_sync deletes old terms by key',
    sql: (s) => tokenSyncByKeySql(s),
  },
  {
    // Counts planned once per session and pruned often (see `countsTunedSql`).
    version: 15,
    name: 'counts planned once and pruned often',
    sql: (s) => countsTunedSql(s),
  },
  {
    // A write's entries in one statement, counted once a statement (see `logCountByStatementSql`).
    version: 16,
    name: 'audit entries put and counted together',
    sql: (s) => logCountByStatementSql(s) + writeFunctionSql(s),
  },
  {
    // A create with webhook deliveries in one statement, its bound read after its locks (`countWithinSql`).
    version: 17,
    name: 'bound guard inside a statement',
    sql: (s) => countWithinSql(s),
  },
  {
    // Pending deliveries counted once a statement (see `outboxCountByStatementSql`).
    version: 18,
    name: 'pending deliveries counted together',
    sql: (s) => outboxCountByStatementSql(s),
  },
  {
    // Each token row's head and stored bytes in columns of their own, empty (see `tokenHeadsSql`).
    version: 19,
    name: 'token heads and stored bytes kept',
    sql: (s) => tokenHeadsSql(s),
  },
  {
    // The trigger that fills them as a row is stored; older rows are filled in steps (`fillTokenHeads`).
    version: 20,
    name: 'token heads filled without a rewrite',
    sql: (s) => tokenHeadsKeptSql(s),
  },
  {
    // What a tenant's open transactions hold staged, for its bound (see `stagedCountSql`).
    version: 21,
    name: 'staged characters counted',
    sql: (s) => stagedCountSql(s),
  },
]

/** How long a step waits for a table's lock before it gives way, and how many times it tries. */
const STEP_LOCK_WAIT = '1s'
const STEP_TRIES = 30

/**
 * Applies one step in its own transaction, without the pool's statement limit (that is for
 * requests). A step that changes a table waits for its lock behind the statements running on it,
 * and every statement after it waits behind the step: so it waits at most `STEP_LOCK_WAIT`, then
 * gives way (rolled back, nothing changed) and tries again after a pause, 100 ms doubling up to 5 s,
 * at most `STEP_TRIES` times. A busy table's calls are held a second at most at a time, never until
 * its longest statement ends.
 */
async function applyStep(client: PoolClient, s: string, m: Migration): Promise<void> {
  for (let tries = 1; ; tries++) {
    await client.query('BEGIN')
    try {
      await client.query(`SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = '${STEP_LOCK_WAIT}'`)
      await client.query(m.sql(s))
      await client.query(`INSERT INTO ${s}.tokenvault_migrations (version, name) VALUES ($1, $2)`, [
        m.version,
        m.name,
      ])
      await client.query('COMMIT')
      return
    } catch (error) {
      await client.query('ROLLBACK')
      if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE || tries >= STEP_TRIES) throw error
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** (tries - 1), 5000)))
  }
}

/** PostgreSQL's SQL state for a lock wait that ran past `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03'

/** What `migrate` found once the schema is current: the fills recorded as done (see token-heads.ts). */
export interface Migrated {
  fillsDone: string[]
}

/**
 * Creates `schema` if missing and applies the migrations it lacks, each in its own transaction.
 * Idempotent, and safe when several processes open the same database at once: it holds a
 * session-level advisory lock (derived from the schema name) while it reads and migrates. Refuses a
 * schema migrated by a newer version of this library.
 */
export async function migrate(pool: Pool, schema: string): Promise<Migrated> {
  const s = quoteIdent(schema)
  const key = lockKey(`tokenvault\u0000migrate\u0000${schema}`)
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query(`SELECT pg_advisory_lock(${key})`)
    try {
      const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${s}`)
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.tokenvault_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`)
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM ${s}.tokenvault_migrations`,
      )
      const applied = new Set(rows.map((r) => r.version))
      const latest = Math.max(0, ...MIGRATIONS.map((m) => m.version))
      const newer = rows.find((r) => r.version > latest)
      if (newer)
        throw new Error(
          `postgresStore: schema ${schema} is at version ${newer.version}, newer than ${latest}`,
        )
      for (const m of MIGRATIONS) if (!applied.has(m.version)) await applyStep(client, s, m)
      const fills = await client.query<{ name: string }>(`SELECT name FROM ${s}.tokenvault_fills`)
      return { fillsDone: fills.rows.map((r) => r.name) }
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${key})`)
    }
  } catch (error) {
    // A client in an unknown state (and its session lock) is dropped rather than reused.
    broken = error instanceof Error ? error : new Error(String(error))
    throw error
  } finally {
    client.release(broken)
  }
}
