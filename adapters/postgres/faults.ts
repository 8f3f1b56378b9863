import type { Pool } from 'pg'
import { StoreError } from '../../src/store/index.js'

/**
 * SQLSTATE classes and codes that mean the database can't serve right now, not that the request
 * was wrong: connection exceptions (08), operator intervention (57: shutdown, terminated backend,
 * cannot connect now, statement timeout / cancel), insufficient resources (53), and lock timeouts.
 */
const UNAVAILABLE_CLASSES = ['08', '53', '57']
const UNAVAILABLE_CODES = new Set(['55P03'])
/** Node and `pg` errors of a broken or unreachable connection. */
const NETWORK =
  /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed/i

/** Whether `error` means the database is unreachable or overloaded (a retry later may succeed). */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') {
    if (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_CLASSES.includes(code.slice(0, 2))) return true
    if (NETWORK.test(code)) return true
  }
  return NETWORK.test(error.message)
}

/**
 * `error` as the store's `StoreError('unavailable')` when the database can't be reached (so HTTP
 * answers 503 with `Retry-After` and the process stays up), else unchanged. The message names no
 * host, user or password.
 */
export function asStoreError(error: unknown): unknown {
  if (error instanceof StoreError || !isUnavailable(error)) return error
  return new StoreError('unavailable', 'postgresStore: the database is unreachable or not answering', {
    retryAfter: 1,
    cause: error,
  })
}

/**
 * Keeps a pool's broken connections from crashing the process: an `'error'` listener on the pool
 * (idle clients) and on every client it hands out (a checked-out client whose backend is
 * terminated emits `'error'`; the query in flight still fails, and `asStoreError` maps it).
 * Safe to call more than once on a pool.
 */
export function watchPool(pool: Pool): void {
  const marked = pool as Pool & { tokenvaultWatched?: true }
  if (marked.tokenvaultWatched) return
  marked.tokenvaultWatched = true
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
}

/** Default timeouts for pools the store or the CLI create (ms): a call never hangs on the database. */
export const DEFAULT_TIMEOUTS = { statementTimeoutMs: 5000, connectTimeoutMs: 5000 } as const
