import type { CommitsOn } from '../adapters/file/forward.js'
import { missingPeer } from '../adapters/optional-peer.js'
import type { Store } from '../src/store/index.js'
import { describeStore, postgresUrlProblem, storeFailure } from './store-errors.js'

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

/** A PostgreSQL pool's connections at most, and the `application_name` they show in `pg_stat_activity`. */
export interface PoolShape {
  max: number
  name: string
}

/**
 * Opens the store a `--store` value names: `memory`, `file:PATH` (a file store in directory PATH)
 * or a `postgres://` / `postgresql://` URL (a Postgres store over a pool of its own; `pg` is loaded
 * only then). Throws an `Error` with a readable message for anything else. `log` takes the store's
 * warnings (a failed commit, writes resumed); `pool`, a PostgreSQL pool's size and name.
 */
export async function openStore(
  spec: string,
  options: { log?: (line: string) => void; commitsOn?: CommitsOn; serving?: boolean; pool?: PoolShape } = {},
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
    const commitsOn = options.commitsOn ? { commitsOn: options.commitsOn } : {}
    return { store: await fileStore({ path, log, ...commitsOn }), release: none }
  }
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const problem = postgresUrlProblem(spec)
    if (problem) throw new Error(problem)
    const { default: pg } = await import('pg').catch((error: unknown) => {
      throw missingPeer(error, 'pg', '^8', '--store postgres://')
    })
    const { postgresStore } = await import('../adapters/postgres/index.js')
    const { DEFAULT_TIMEOUTS, watchPool } = await import('../adapters/postgres/faults.js')
    const pool = new pg.Pool({
      connectionString: spec,
      max: options.pool?.max ?? 10,
      application_name: options.pool?.name ?? 'tokenvault',
      statement_timeout: DEFAULT_TIMEOUTS.statementTimeoutMs,
      connectionTimeoutMillis: DEFAULT_TIMEOUTS.connectTimeoutMs,
    })
    // Without these listeners a terminated backend would crash the server.
    watchPool(pool)
    try {
      const store = await postgresStore({ pool })
      const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
      const held = options.serving ? await holdServing(pg.Client, spec, log) : async () => {}
      return {
        store,
        release: async () => {
          await held()
          await pool.end()
        },
      }
    } catch (error) {
      await pool.end().catch(() => {})
      throw error
    }
  }
  throw new Error(`--store must be memory, file:PATH or a postgres:// URL, not ${JSON.stringify(spec)}`)
}

/**
 * The advisory lock (its two keys: never one of the store's own one-key locks) every server on a
 * PostgreSQL database holds shared for as long as it serves, and `keys rotate-master` takes
 * exclusive: a running server keeps the data keys it unwrapped and seals what it writes next under
 * the master key the rotation retires.
 */
export const SERVING_LOCK = [0x74766c74, 1] as const

/** What `holdServing` and `lockOutServers` need of `pg`: its `Client`. */
type PgClient = typeof import('pg').Client

/**
 * Takes `SERVING_LOCK` shared on a connection of its own (outside the pool) and holds it; resolves
 * once it holds it (a rotation under way holds it exclusive: this waits for its end, and says so),
 * or rejects. A connection lost later is logged and the lock taken again every 5 s: until then a
 * rotation would not see this server. The function it answers lets it go.
 */
async function holdServing(
  Client: PgClient,
  spec: string,
  log: (line: string) => void,
): Promise<() => Promise<void>> {
  const state: { client?: InstanceType<PgClient>; timer?: NodeJS.Timeout | undefined; stopped: boolean } = {
    stopped: false,
  }
  /** `again`: taken again after its connection ended, while this server goes on serving. */
  const take = async (again = false): Promise<void> => {
    const client = new Client({ connectionString: spec, connectionTimeoutMillis: 10_000 })
    state.client = client
    client.on('error', () => {})
    try {
      await client.connect()
      const free = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock_shared($1, $2) AS ok', [
        ...SERVING_LOCK,
      ])
      if (!free.rows[0]?.ok) {
        log(
          again
            ? 'the store is being rotated (keys rotate-master): this server takes its serving lock again once it ends'
            : 'the store is being rotated (keys rotate-master): waiting for it to end before serving',
        )
        await client.query('SELECT pg_advisory_lock_shared($1, $2)', [...SERVING_LOCK])
      }
    } catch (error) {
      await client.end().catch(() => {})
      throw error
    }
    client.once('end', lost)
  }
  const retry = () => {
    if (state.stopped) return
    state.timer = setTimeout(() => {
      state.timer = undefined
      if (state.stopped) return
      take(true).then(() => log('the PostgreSQL store: this server holds its serving lock again'), retry)
    }, 5_000).unref()
  }
  const lost = () => {
    if (state.stopped) return
    log(
      "the PostgreSQL store: the connection holding this server's serving lock ended; taking it again every 5 s (until then keys rotate-master would not see this server)",
    )
    retry()
  }
  await take()
  return async () => {
    state.stopped = true
    clearTimeout(state.timer)
    await state.client?.end().catch(() => {})
  }
}

/**
 * Takes `SERVING_LOCK` exclusive on a connection of its own, for as long as the function it answers
 * is not called: or answers how many other connections hold it (servers), having taken nothing.
 */
export async function lockOutServers(spec: string): Promise<{ holders: number } | (() => Promise<void>)> {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: spec, connectionTimeoutMillis: 10_000 })
  client.on('error', () => {})
  await client.connect()
  try {
    const taken = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
      ...SERVING_LOCK,
    ])
    if (taken.rows[0]?.ok) return () => client.end()
    const held = await client.query<{ n: string }>(
      `SELECT count(DISTINCT pid) AS n FROM pg_locks
        WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted AND pid <> pg_backend_pid()`,
      [...SERVING_LOCK],
    )
    await client.end()
    return { holders: Number(held.rows[0]?.n ?? 1) }
  } catch (error) {
    await client.end().catch(() => {})
    throw error
  }
}

/** How `openStoreWaiting` waits. */
export interface StoreWait {
  /** Milliseconds to keep trying a store that is not reachable yet; 0: one try. @default 0 */
  waitMs?: number
  /** Takes the progress lines. */
  log?: (line: string, level?: string) => void
  /** Stops the wait (a signal during start-up): the last failure is thrown at once. */
  signal?: AbortSignal
  /** Milliseconds since some fixed point (injected by tests); default `performance.now`. */
  now?: () => number
  /** For a server: on PostgreSQL it holds `SERVING_LOCK` shared while the store is open. */
  serving?: boolean
}

/** The pause before try `attempt` (0-based): 100 ms doubling up to 2 s, each drawn in its upper half. */
export function backoffMs(attempt: number, random = Math.random): number {
  const ceiling = Math.min(2_000, 100 * 2 ** attempt)
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}

const pause = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done)
  })

/**
 * `openStore`, tried again while it fails for a reason that waiting may cure (connection refused,
 * host not found, the database starting up) and `waitMs` has not passed, with back-off and a
 * progress line per try. Throws an `Error` that names the store and what to check.
 */
export async function openStoreWaiting(spec: string, wait: StoreWait = {}): Promise<OpenedStore> {
  const now = wait.now ?? (() => performance.now())
  const waitMs = wait.waitMs ?? 0
  const started = now()
  for (let attempt = 0; ; attempt++) {
    try {
      return await openStore(spec, { ...(wait.log ? { log: wait.log } : {}), serving: wait.serving === true })
    } catch (error) {
      const failure = storeFailure(error, spec)
      const waited = now() - started
      if (!failure.retry || waited >= waitMs || wait.signal?.aborted)
        throw new Error(failure.message, { cause: error })
      const ms = Math.min(backoffMs(attempt), Math.max(0, waitMs - waited))
      const seconds = (n: number) => (n / 1000).toFixed(1)
      wait.log?.(
        `waiting for ${describeStore(spec)}: ${failure.reason}; next try in ${ms} ms (${seconds(waited)} s of --store-wait-ms ${seconds(waitMs)} s)`,
        'warn',
      )
      await pause(ms, wait.signal)
      if (wait.signal?.aborted) throw new Error(`stopped while waiting for ${describeStore(spec)}`)
    }
  }
}
