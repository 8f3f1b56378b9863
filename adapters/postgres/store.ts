import type { Pool } from 'pg'
import type { Clock, Pacer } from '../../src/kernel/index.js'
import { assertNever, pacedTurn } from '../../src/kernel/index.js'
import type { ExpiringKind, RecordKey, Store } from '../../src/store/index.js'
import { StoreError } from '../../src/store/index.js'
import { missingPeer } from '../optional-peer.js'
import { clientKeyReads } from './client-keys.js'
import { CountSlots } from './count-slots.js'
import { documentReads } from './documents.js'
import { asStoreError, DEFAULT_TIMEOUTS, watchPool } from './faults.js'
import { TenantGate } from './gate.js'
import { DEFAULT_KEY_CACHE_MS, keyCache } from './key-cache.js'
import { prepared } from './keys.js'
import { LockKeys } from './locking.js'
import { logReads } from './logs.js'
import { migrate } from './migrations.js'
import { webhookReads } from './outbox.js'
import { proxyReads } from './proxies.js'
import { type GatedQuery, gateLineOf, reads } from './reads.js'
import { type Statements, statements, type Tables, tables } from './statements.js'
import { fillTokenHeads, TOKEN_HEADS_FILL } from './token-heads.js'
import { expiredTokenIntentsSql, tokenIntentReads } from './token-intents.js'
import { pgWriter } from './writes.js'

/** Options of `postgresStore` with a pool the caller owns (and ends, after `close()`). */
export interface PostgresPoolOptions {
  pool: Pool
  /**
   * How long (ms) a key lookup is cached in this process; a revocation made by another process takes
   * effect here within it (this process's own writes clear the cache at once). 0 disables the cache.
   * @default 500
   */
  keyCacheMs?: number
  /**
   * The clock the key cache ages its entries by (`keyCacheMs`). Tests pass the service's manual
   * clock to step past the cache's lifetime without waiting. Default: the monotonic `performance.now()`.
   */
  clock?: Clock
  /** The schema that holds the tables (created if missing). Default: the pool's `current_schema()`. */
  schema?: string
}

/** Options of `postgresStore` with a pool the store creates from a connection string and ends on `close()`. */
export interface PostgresUrlOptions {
  /** A libpq connection URI, e.g. `postgres://user@127.0.0.1:5432/db`. */
  connectionString: string
  /** At most this many connections (default 10). */
  max?: number
  /**
   * Longest a statement may run before the database cancels it (the call answers 503).
   * @default 5000
   */
  statementTimeoutMs?: number
  /**
   * Longest a call waits for a connection from the pool, or for a new one to open (then 503).
   * @default 5000
   */
  connectTimeoutMs?: number
  /**
   * How long (ms) a key lookup is cached in this process; a revocation made by another process takes
   * effect here within it (this process's own writes clear the cache at once). 0 disables the cache.
   * @default 500
   */
  keyCacheMs?: number
  /**
   * The clock the key cache ages its entries by (`keyCacheMs`). Tests pass the service's manual
   * clock to step past the cache's lifetime without waiting. Default: the monotonic `performance.now()`.
   */
  clock?: Clock
  /** The schema that holds the tables (created if missing). Default: the user's `current_schema()`. */
  schema?: string
}

/** How `postgresStore` reaches the database. */
export type PostgresStoreOptions = PostgresPoolOptions | PostgresUrlOptions

async function createPool(options: PostgresUrlOptions): Promise<Pool> {
  const pg = await import('pg').catch((error: unknown) => {
    throw missingPeer(error, 'pg', '^8', 'postgresStore')
  })
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_TIMEOUTS.statementTimeoutMs,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_TIMEOUTS.connectTimeoutMs,
  })
  watchPool(pool)
  return pool
}

async function currentSchema(pool: Pool): Promise<string> {
  const { rows } = await pool.query<{ schema: string | null }>('SELECT current_schema() AS schema')
  const schema = rows[0]?.schema
  if (!schema)
    throw new Error('postgresStore: no current schema (create it, fix search_path, or pass `schema`)')
  return schema
}

/**
 * A store in PostgreSQL, shared by any number of processes. Opening it applies the schema
 * migrations it lacks (see `migrate`). Records are copied in and out as JSON (`jsonb`).
 *
 * Linearizability: `write` is one call of the schema's `tv_write` function (one round trip, in its
 * own implicit transaction, READ COMMITTED), or, while its tenant has many write calls in flight,
 * one of up to 16 writes in one call of `tv_write_many` (see `WriteGroups`): one transaction that
 * takes the locks of all of them first, in the same global order, then runs each `tv_write` in a
 * subtransaction of its own, in the order they came, so each is as if it ran alone at that point. It first takes transaction-scoped advisory locks on
 * the records the batch names — each guard's records (a token, a token's lock, a link, a
 * transaction, a nonce, a formula, a formula's use, a fingerprint) and each op's (see
 * `recordNames`) — in one global key order, so writes never deadlock on them; then runs its guards,
 * each on a snapshot taken after the locks were granted; then applies its ops. Two writes that
 * conflict name a common record, so the second runs its guards only after the first committed,
 * sees its effects and fails; writes that name no common record run in parallel, even within one
 * tenant and on one token's neighbours. A create's own `token.absent`, its first guard, is checked
 * by its INSERT through the primary key under the same lock (see `writeArguments`). There is no
 * tenant-wide or store-wide lock (a per-tenant bound locks its count, shared with one of 8 slots
 * while it has room: `count-slots.ts`), and a plain token put holds its fingerprint's lock shared: puts of
 * equal values never wait on each other, only on a deduplicating create of that value
 * (`token.fingerprint_absent` holds it exclusive).
 * So a nonce authorization (`session.unchanged` + `session.put`), a commit
 * (`transaction.unchanged` + the staged writes and `transaction.put`) and a compare-and-set update
 * (`token.unchanged` + `token.put`) are conditional updates that exactly one racer wins, in one
 * process or many. A deadlock among row locks is retried from the start.
 * Token locks of open transactions live in a table (`token_locks`), so every process sees them.
 * A batch with checks and no ops takes no lock: its one statement sees one snapshot.
 * Reads are single statements, so each sees one consistent snapshot of committed writes.
 * A write is acknowledged after its implicit transaction commits, so it is as durable as the server's settings
 * (`fsync`, `synchronous_commit`) make commits.
 *
 * Limits: PostgreSQL text and `jsonb` can't hold U+0000, so a record containing it fails to write;
 * `jsonb` keeps object members in its own order (values compare equal, key order may differ).
 *
 * `close()` waits for the calls in flight, then ends the pool only when the store created it (from
 * `connectionString`); a pool passed in stays open for its owner to end.
 */
export async function postgresStore(options: PostgresStoreOptions): Promise<Store> {
  const owned = !('pool' in options)
  const pool = 'pool' in options ? options.pool : await createPool(options)
  // A pool passed in gets the same listeners: a broken connection must never crash the host.
  watchPool(pool)
  try {
    const schema = options.schema ?? (await currentSchema(pool))
    const { fillsDone } = await migrate(pool, schema)
    const fill = !fillsDone.includes(TOKEN_HEADS_FILL)
    return openStore(pool, schema, owned, options.keyCacheMs ?? DEFAULT_KEY_CACHE_MS, options.clock, fill)
  } catch (error) {
    if (owned) await pool.end()
    throw error
  }
}

/** The statement listing records of `kind` whose time has come. */
function expiredStatement(st: Statements, kind: Exclude<ExpiringKind, 'token_intent'>): string {
  switch (kind) {
    case 'token':
      return st.expiredTokens
    case 'token.cvc':
      return st.expiredCvcs
    case 'session':
      return st.expiredSessions
    case 'application':
      return st.expiredApplications
    case 'transaction.open':
      return st.expiredOpenTransactions
    case 'transaction.ended':
      return st.expiredEndedTransactions
    case 'idempotency':
      return st.expiredIdempotency
    case 'outbox':
      return st.expiredOutbox
    default:
      return assertNever(kind)
  }
}

/** Counts the calls in flight, so that `close` refuses new ones and waits for those running. */
function inFlightCalls(end: () => Promise<void>) {
  let closed = false
  let closing: Promise<void> | undefined
  let inFlight = 0
  let begun = 0
  let idle: (() => void) | undefined
  const done = () => {
    if (--inFlight === 0) idle?.()
  }
  /** Runs `fn` unless the store is closed, counting it as in flight so that `close` can wait for it. */
  const guard = <T>(fn: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new StoreError('closed', 'postgresStore: the store is closed'))
    inFlight++
    begun++
    let result: Promise<T>
    try {
      result = fn()
    } catch (error) {
      done()
      return Promise.reject(error)
    }
    // One promise layer: counts the call done, and names a failure as a store error.
    return result.then(
      (value) => {
        done()
        return value
      },
      (error: unknown) => {
        done()
        throw asStoreError(error)
      },
    )
  }
  const close = () => {
    closed = true
    closing ??= (async () => {
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve))
      await end()
    })()
    return closing
  }
  return { guard, close, begun: () => begun }
}

/** The gate's line of the background fill: no tenant's id (they are UUIDs), so it takes turns with theirs. */
const FILL_LINE = 'tokenvault fill'

/**
 * Fills the token rows stored before migration 20 in the background, a bounded step a turn of the
 * gate (`fillTokenHeads`), kept to a tenth of the time while calls come (`pacedTurn`: a step
 * during which a call of the store's began is followed by a pause of 9 × its time, at most 5 s); a
 * step that fails (the database unreachable, the store closing) is tried again later, 1 s then
 * doubling up to a minute. Answers what stops it, for `close`.
 */
export function fillInBackground(
  pool: Pool,
  schema: string,
  guard: <T>(fn: () => Promise<T>) => Promise<T>,
  gate: TenantGate,
  begun: () => number,
  pacer: Pacer = HOST_PACER,
): () => void {
  let stopped = false
  let own = 0
  const turn = pacedTurn(
    async () => {},
    pacer,
    FILL_SHARE,
    () => begun() - own,
  )
  const run = async <T>(fn: () => Promise<T>) => {
    await turn()
    own++
    return guard(() => gate.run(FILL_LINE, fn))
  }
  const attempt = (delayMs: number) => {
    fillTokenHeads(schema, run, pool, () => !stopped).then(
      () => undefined,
      () => {
        if (!stopped) setTimeout(() => attempt(Math.min(delayMs * 2, 60_000)), delayMs).unref()
      },
    )
  }
  attempt(1000)
  return () => {
    stopped = true
  }
}

/** The share of the time the fill takes while calls come (see `fillInBackground`). */
const FILL_SHARE = 0.1

/** The fill's time and pauses: the host's monotonic time and an unreferenced timer. */
const HOST_PACER: Pacer = {
  now: () => performance.now(),
  pause: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref()),
}

/** The store's reads by kind, each statement in its tenant's line at the gate. */
function storeReads(t: Tables, pool: Pool, gate: TenantGate) {
  // A statement's `line` goes to pg with it, which reads only the fields it knows.
  const query = (config: GatedQuery) => gate.run(gateLineOf(config), () => pool.query(config))
  return {
    read: reads(t, query),
    hooks: webhookReads(t, query),
    clientKeys: clientKeyReads(t, query),
    proxies: proxyReads(t, query),
    intents: tokenIntentReads(t, query),
    logs: logReads(t, query),
    documents: documentReads(t, query),
  }
}

function openStore(
  pool: Pool,
  schema: string,
  owned: boolean,
  keyCacheMs: number,
  clock: Clock | undefined,
  fill: boolean,
): Store {
  const t = tables(schema)
  const st = statements(t)
  const locks = new LockKeys(schema)
  // Calls wait for a connection in their tenant's own line, served in turn (see `TenantGate`).
  const poolOptions = (pool as { options?: { max?: number; connectionTimeoutMillis?: number } }).options
  const gate = new TenantGate(
    poolOptions?.max || 10,
    poolOptions?.connectionTimeoutMillis || DEFAULT_TIMEOUTS.connectTimeoutMs,
  )
  const { read, hooks, clientKeys, proxies, intents, logs, documents } = storeReads(t, pool, gate)
  const keys = keyCache(
    keyCacheMs,
    (hash) => read.findKey(hash),
    undefined,
    clock ? () => clock.now().getTime() : undefined,
  )
  const { guard, close, begun } = inFlightCalls(async () => {
    if (owned) await pool.end()
  })
  // Rows stored before migration 20 are filled once; a schema recorded as filled starts nothing.
  const stopFill = fill ? fillInBackground(pool, t.schema, guard, gate, begun) : () => undefined
  const write = pgWriter(
    { pool, schema, t, st, locks, gate, slots: new CountSlots() },
    poolOptions?.max || 10,
  )
  const listExpired = async (query: { kind: ExpiringKind; before: string; limit: number }) => {
    const text =
      query.kind === 'token_intent' ? expiredTokenIntentsSql(t.schema) : expiredStatement(st, query.kind)
    const limit = Math.max(0, Math.floor(query.limit))
    const { rows } = await gate.run('', () => pool.query<RecordKey>(prepared(text, [query.before, limit])))
    return rows.map((r) => ({ tenant_id: r.tenant_id, id: r.id }))
  }

  return {
    write: (batch) => guard(() => write(batch).finally(() => keys.written(batch.ops))),
    listExpired: (query) => guard(() => listExpired(query)),
    persistent: true,
    getTenant: (id) => guard(() => read.getTenant(id)),
    listTenants: () => guard(() => read.listTenants()),
    hasTenants: () => guard(() => read.hasTenants()),
    findKey: (hash) => guard(() => keys.find(hash)),
    getApplication: (tenantId, id) => guard(() => read.getApplication(tenantId, id)),
    listApplications: (tenantId, range) => guard(() => read.listApplications(tenantId, range)),
    getToken: (tenantId, id) => guard(() => read.getToken(tenantId, id)),
    hasAssociation: (tenantId, p, c) => guard(() => read.hasAssociation(tenantId, p, c)),
    listLinks: (tenantId, id) => guard(() => read.listLinks(tenantId, id)),
    listChildren: (tenantId, p, q) => guard(() => read.listChildren(tenantId, p, q)),
    listTokens: (tenantId, q) => guard(() => read.listTokens(tenantId, q)),
    findTokenIds: (tenantId, q) => guard(() => read.findTokenIds(tenantId, q)),
    findChildIds: (tenantId, p, q) => guard(() => read.findChildIds(tenantId, p, q)),
    getTokenHeads: (tenantId, ids) => guard(() => read.getTokenHeads(tenantId, ids)),
    getTokens: (tenantId, ids) => guard(() => read.getTokens(tenantId, ids)),
    getTransaction: (tenantId, id) => guard(() => read.getTransaction(tenantId, id)),
    listTransactions: (tenantId, q) => guard(() => read.listTransactions(tenantId, q)),
    getStaged: (tenantId, tx, ids) => guard(() => read.getStaged(tenantId, tx, ids)),
    listStaged: (tenantId, tx, q) => guard(() => read.listStaged(tenantId, tx, q)),
    getSessionByNonce: (tenantId, hash) => guard(() => read.getSessionByNonce(tenantId, hash)),
    getFormula: (tenantId, id) => guard(() => read.getFormula(tenantId, id)),
    listFormulas: (tenantId, q) => guard(() => read.listFormulas(tenantId, q)),
    getReactor: (tenantId, id) => guard(() => read.getReactor(tenantId, id)),
    listReactors: (tenantId, q) => guard(() => read.listReactors(tenantId, q)),
    getIdempotency: (tenantId, id) => guard(() => read.getIdempotency(tenantId, id)),
    listIdempotency: (tenantId, q) => guard(() => read.listIdempotency(tenantId, q)),
    getClientKey: (tenantId, id) => guard(() => clientKeys.getClientKey(tenantId, id)),
    listClientKeys: (tenantId, range) => guard(() => clientKeys.listClientKeys(tenantId, range)),
    getProxy: (tenantId, id) => guard(() => proxies.getProxy(tenantId, id)),
    listProxies: (tenantId, q) => guard(() => proxies.listProxies(tenantId, q)),
    getTokenIntent: (tenantId, id) => guard(() => intents.getTokenIntent(tenantId, id)),
    listTokenIntents: (tenantId, q) => guard(() => intents.listTokenIntents(tenantId, q)),
    listDocuments: (tenantId, q) => guard(() => documents.listDocuments(tenantId, q)),
    getDocument: (tenantId, id) => guard(() => documents.getDocument(tenantId, id)),
    getDocumentChunk: (tenantId, id, index) => guard(() => documents.getDocumentChunk(tenantId, id, index)),
    getWebhook: (tenantId, id) => guard(() => hooks.getWebhook(tenantId, id)),
    listWebhooks: (tenantId, range) => guard(() => hooks.listWebhooks(tenantId, range)),
    getOutbox: (tenantId, id) => guard(() => hooks.getOutbox(tenantId, id)),
    listOutbox: (tenantId, q) => guard(() => hooks.listOutbox(tenantId, q)),
    listDueOutbox: (q) => guard(() => hooks.listDueOutbox(q)),
    listLogs: (tenantId, q) => guard(() => logs.listLogs(tenantId, q)),
    unindexedLog: (tenantId, entries) => guard(() => logs.unindexedLog(tenantId, entries)),
    countRecords: (tenantId, kind) => guard(() => read.countRecords(tenantId, kind)),
    dump: () => guard(() => read.dump()),
    close: () => {
      stopFill()
      return close()
    },
  }
}

export { plainCreateQuery } from './writes.js'
