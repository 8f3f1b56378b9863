import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import pg from 'pg'
import { describe, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'

/**
 * A PostgreSQL client program (`pg_dump`, `psql`) of the newest installed server
 * (`/usr/lib/postgresql/<version>/bin`, Debian's layout), else `/usr/bin`'s; undefined when neither.
 */
export function pgProgram(name: string): string | undefined {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  return [...versions.map((v) => `${root}/${v}/bin/${name}`), `/usr/bin/${name}`].find((p) => existsSync(p))
}

/** The test database's URL (`TOKENVAULT_PG_URL`), or undefined when it is not set. */
export const PG_URL = process.env['TOKENVAULT_PG_URL'] || undefined

/**
 * `describe` when a test database is configured. Without one, tests are skipped with a note outside
 * CI, and fail in CI (`CI` set): there a missing database is a broken pipeline, not a reason to skip.
 */
export function describePostgres(name: string, body: (url: string) => void): void {
  if (PG_URL) {
    describe(name, () => body(PG_URL))
    return
  }
  if (process.env['CI']) {
    describe(name, () => {
      it('has a database', () => {
        throw new Error(
          'TOKENVAULT_PG_URL is not set: CI must run the Postgres tests (see scripts/pg-test-server.sh)',
        )
      })
    })
    return
  }
  console.warn(
    `skipping "${name}": TOKENVAULT_PG_URL is not set (start a server with: eval "$(scripts/pg-test-server.sh start)")`,
  )
  describe.skipIf(true)(name, () => body(''))
}

/** A fresh, unused schema name. */
export const freshSchema = () => `tv_test_${randomBytes(6).toString('hex')}`

/** A pool for the tests of one file. */
export const testPool = (url: string, max = 10) => new pg.Pool({ connectionString: url, max })

/** Drops the schemas a test file made. */
export async function dropSchemas(pool: pg.Pool, schemas: string[]): Promise<void> {
  for (const schema of schemas)
    await pool.query(`DROP SCHEMA IF EXISTS "${schema.replace(/"/g, '""')}" CASCADE`)
}

/**
 * Resolves once some session waits for the advisory lock `key` (a `LockKeys` key): the database's
 * own `pg_locks` says so, rather than a sleep. Fails after 10 s (a guard against hanging).
 */
export async function waitingForLock(pool: pg.Pool | pg.PoolClient, key: string): Promise<void> {
  const deadline = performance.now() + 10_000
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
         AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
      [key],
    )
    if (rows[0]!.n > 0) return
    if (performance.now() > deadline) throw new Error(`no session waits for the advisory lock ${key}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Empties every table of a store's schema. */
export async function truncateAll(pool: pg.Pool, schema: string): Promise<void> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) AS name FROM information_schema.tables
     WHERE table_schema = $1 AND table_name <> 'tokenvault_migrations'`,
    [schema],
  )
  await pool.query(`TRUNCATE ${rows.map((r) => r.name).join(', ')}`)
}

/** One JSON call to a CLI server at `base` with the `SVC` key header: its status and parsed body. */
export async function callJson(base: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'svc-api-key': key, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : undefined }
}

/**
 * Two services on one schema, each over its own pool, as two server processes would be, sharing a
 * master key and a manual clock, with a tenant and a private application that creates and reads
 * tokens (`key`). `close` closes both services (the pools stay the caller's).
 */
export async function twoServices(pools: pg.Pool[], schema: string) {
  const masterKey = randomBytes(32)
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const [a, b] = await Promise.all(
    pools
      .slice(0, 2)
      .map(async (pool) =>
        createService({ store: await postgresStore({ pool, schema }), clock, masterKey, runner: null }),
      ),
  )
  const close = () => Promise.all([a!.close(), b!.close()])
  try {
    const tenant = await a!.admin.createTenant({ name: 't' })
    const { key } = await a!.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    })
    return { a: a!, b: b!, key, close }
  } catch (error) {
    await close()
    throw error
  }
}

/** Calls `seen` with the text of each query `pool.query` sends (its `query` wrapped in place). */
export function watchQueries(pool: pg.Pool, seen: (text: string) => void): void {
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown
  ;(pool as unknown as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
    seen(typeof config === 'string' ? config : ((config as { text?: string } | undefined)?.text ?? ''))
    return query(config, ...rest)
  }
}
