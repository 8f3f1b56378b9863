import type { Store } from '../src/store/contract.js'

/** A store opened from a `--store` value, and how to release what it holds beyond the store. */
export interface OpenedStore {
  store: Store
  /** Ends what the CLI created for the store (a Postgres pool) after `service.close()`. */
  release(): Promise<void>
}

/** The default `--store`: a file store in `./.tokenvault`. */
export const DEFAULT_STORE = 'file:./.tokenvault'

/** Whether `spec` has the form of a `--store` value (it may still fail to open). */
export function isStoreSpec(spec: string): boolean {
  return (
    spec === 'memory' ||
    (spec.startsWith('file:') && spec.length > 'file:'.length) ||
    spec.startsWith('postgres://') ||
    spec.startsWith('postgresql://')
  )
}

/**
 * Opens the store a `--store` value names: `memory`, `file:PATH` (a file store in directory PATH)
 * or a `postgres://` / `postgresql://` URL (a Postgres store over a pool of its own; `pg` is loaded
 * only then). Throws an `Error` with a readable message for anything else. `log` takes the store's
 * warnings (a failed commit, writes resumed).
 */
export async function openStore(
  spec: string,
  options: { log?: (line: string) => void } = {},
): Promise<OpenedStore> {
  const none = async () => {}
  if (spec === 'memory') {
    const { memoryStore } = await import('../adapters/memory/index.js')
    return { store: memoryStore(), release: none }
  }
  if (spec.startsWith('file:')) {
    const path = spec.slice('file:'.length)
    if (path === '') throw new Error('--store file:PATH needs a directory path')
    const { fileStore } = await import('../adapters/file/index.js')
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
    // LMDB: nothing to read back at open; other processes may serve the same directory.
    return { store: await fileStore({ path, log }), release: none }
  }
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const { default: pg } = await import('pg')
    const { postgresStore } = await import('../adapters/postgres/index.js')
    const { DEFAULT_TIMEOUTS, watchPool } = await import('../adapters/postgres/faults.js')
    const pool = new pg.Pool({
      connectionString: spec,
      statement_timeout: DEFAULT_TIMEOUTS.statementTimeoutMs,
      connectionTimeoutMillis: DEFAULT_TIMEOUTS.connectTimeoutMs,
    })
    // Without these listeners a terminated backend would crash the server.
    watchPool(pool)
    try {
      return { store: await postgresStore({ pool }), release: () => pool.end() }
    } catch (error) {
      await pool.end().catch(() => {})
      throw error
    }
  }
  throw new Error(`--store must be memory, file:PATH or a postgres:// URL, not ${JSON.stringify(spec)}`)
}
