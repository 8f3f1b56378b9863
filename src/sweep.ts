import { isoAfter } from './clock.js'
import { ServiceError } from './errors.js'
import { deletionsWithLinks } from './links.js'
import { writeDiscard } from './locks.js'
import { reindexed } from './search-expressions.js'
import type { RecordKey, Store } from './store/contract.js'
import type { StoredToken } from './types.js'

/** How many records the sweep lists (and then writes one by one) per round. */
export const SWEEP_BATCH = 256

/** How long an ended (committed, rolled back, expired) transaction is kept: 24 hours, in ms. */
export const ENDED_RETENTION_MS = 24 * 60 * 60 * 1000

/** What one sweep removed or ended. */
export interface SweepCounts {
  /** Expired sessions deleted. */
  sessions: number
  /** Applications past `expires_at` deleted (their keys stop working). */
  applications: number
  /** Open transactions past their expiry marked `expired` (their staged writes and locks dropped). */
  transactions: number
  /** Expired tokens deleted, with every association they were part of. */
  tokens: number
  /** Card tokens rewritten without their `cvc`, an hour after it was given (`cvc_expires_at`). */
  cvcs: number
  /** Transactions deleted 24 hours after they ended (commit/rollback then answer 404, not 409). */
  endedTransactions: number
  /** Idempotency records (kept answers) deleted 24 hours after their first request. */
  idempotency: number
}

/**
 * Lists records of one kind in bounded batches and hands each to `act`, which answers whether it
 * changed it. Stops once a batch comes back short, or changes nothing (what is left is not due).
 */
async function drain(
  store: Store,
  kind: Parameters<Store['listExpired']>[0]['kind'],
  before: string,
  batch: number,
  act: (key: { tenant_id: string; id: string }) => Promise<boolean>,
): Promise<number> {
  let total = 0
  for (;;) {
    const keys = await store.listExpired({ kind, before, limit: batch })
    let done = 0
    for (const key of keys) if (await act(key)) done++
    total += done
    if (keys.length < batch || done === 0) return total
  }
}

/** Deletes a session `listExpired` listed as past its `expires_at`. */
async function deleteSession(store: Store, key: RecordKey): Promise<boolean> {
  const result = await store.write({ ops: [{ op: 'session.delete', tenant_id: key.tenant_id, id: key.id }] })
  return result.ok
}

/** Deletes an idempotency record past its `expires_at`, unless it was claimed anew meanwhile. */
async function deleteIdempotency(store: Store, now: string, key: RecordKey): Promise<boolean> {
  const record = await store.getIdempotency(key.tenant_id, key.id)
  if (!record || record.expires_at > now) return false
  const result = await store.write({
    checks: [{ check: 'idempotency.claimed', tenant_id: key.tenant_id, id: key.id, claim: record.claim }],
    ops: [{ op: 'idempotency.delete', tenant_id: key.tenant_id, id: key.id }],
  })
  return result.ok
}

/**
 * One bounded round of the sweep for sessions or idempotency records alone (any tenant's, at most
 * `SWEEP_BATCH`): what a tenant at its bound of either runs before it is refused, so expired records
 * free their places even where the host never sweeps. Answers how many it deleted.
 */
export async function sweepExpiredOf(
  store: Store,
  kind: 'session' | 'idempotency',
  now: string,
): Promise<number> {
  let deleted = 0
  for (const key of await store.listExpired({ kind, before: now, limit: SWEEP_BATCH })) {
    if (await (kind === 'session' ? deleteSession(store, key) : deleteIdempotency(store, now, key))) deleted++
  }
  return deleted
}

/**
 * The expiry policy, applied by the core: lists what may be due from the store in bounded batches
 * and writes each change as its own guarded write. A record that changed between the listing and
 * the write (a transaction committed, a token updated meanwhile) fails its guard and is left as it
 * is; it is not counted.
 *
 * - Sessions past `expires_at` are deleted.
 * - Applications past `expires_at` are deleted (an update keeps `expires_at`, so nothing races it).
 * - Open transactions past `expires_at` are marked `expired` (ended then), and the lock records
 *   they still hold deleted.
 * - Tokens past `expires_at` are deleted with their associations (guarded on those being all, so a
 *   token linked meanwhile is left to the next sweep), unless an open transaction holds them (they
 *   go once it ends).
 * - Card tokens past `cvc_expires_at` are rewritten without `data.cvc` (read through the service's
 *   sealed store, a due cvc already reads as gone: the rewrite stores that, sealed afresh, with
 *   search indexes evaluated again, see `reindexed`, and its fingerprint made again when
 *   `refingerprint` is given), unless an open transaction holds them.
 * - Idempotency records are deleted at their `expires_at` (24 hours after the first request).
 * - Transactions are deleted `ENDED_RETENTION_MS` after they ended. A transaction ends at the latest
 *   when it expires, so candidates are listed by `expires_at` up to `now − 24 h + transactionTtlMs`
 *   and each is checked against its own `ended_at`.
 */
export async function sweepExpired(
  store: Store,
  now: string,
  options: {
    transactionTtlMs: number
    /** The token with its fingerprint made again (the service's, under the tenant's key); none: kept. */
    refingerprint?: (token: StoredToken) => Promise<StoredToken>
  },
  batch = SWEEP_BATCH,
): Promise<SweepCounts> {
  const sessions = await drain(store, 'session', now, batch, (key) => deleteSession(store, key))
  const applications = await drain(store, 'application', now, batch, async (key) => {
    const app = await store.getApplication(key.tenant_id, key.id)
    if (!app || app.expires_at === undefined || app.expires_at > now) return false
    const result = await store.write({
      checks: [{ check: 'application.present', tenant_id: app.tenant_id, id: app.id }],
      ops: [{ op: 'application.delete', tenant_id: app.tenant_id, id: app.id }],
    })
    return result.ok
  })
  const transactions = await drain(store, 'transaction.open', now, batch, async (key) => {
    const tx = await store.getTransaction(key.tenant_id, key.id)
    if (!tx || tx.state !== 'open' || tx.expires_at > now) return false
    return (await writeDiscard(store, tx, 'expired', tx.expires_at)).ok
  })
  const tokens = await drain(store, 'token', now, batch, async (key) => {
    const token = await store.getToken(key.tenant_id, key.id)
    if (!token || token.expires_at === undefined || token.expires_at > now) return false
    const deletion = await deletionsWithLinks(store, token.tenant_id, [token.id])
    const result = await store.write({
      checks: [
        { check: 'token.unchanged', tenant_id: token.tenant_id, id: token.id, token },
        { check: 'token.unlocked', tenant_id: token.tenant_id, id: token.id, now },
        ...deletion.checks,
      ],
      ops: deletion.ops,
    })
    return result.ok
  })
  const cvcs = await drain(store, 'token.cvc', now, batch, async (key) => {
    let token: StoredToken | null
    try {
      token = await store.getToken(key.tenant_id, key.id)
    } catch (error) {
      // A card whose ciphertext fails its integrity check can't be rewritten: left as it is.
      if (error instanceof ServiceError && error.code === 'unreadable') return false
      throw error
    }
    if (!token || (token.cvc_expires_at !== undefined && token.cvc_expires_at > now)) return false
    const next = reindexed(token)
    const result = await store.write({
      checks: [
        { check: 'token.unchanged', tenant_id: token.tenant_id, id: token.id, token },
        { check: 'token.unlocked', tenant_id: token.tenant_id, id: token.id, now },
      ],
      ops: [{ op: 'token.put', token: options.refingerprint ? await options.refingerprint(next) : next }],
    })
    return result.ok
  })
  const cutoff = isoAfter(now, -ENDED_RETENTION_MS)
  const listedUpTo = isoAfter(cutoff, options.transactionTtlMs)
  const endedTransactions = await drain(store, 'transaction.ended', listedUpTo, batch, async (key) => {
    const tx = await store.getTransaction(key.tenant_id, key.id)
    if (!tx || tx.state === 'open' || (tx.ended_at ?? tx.expires_at) > cutoff) return false
    const result = await store.write({
      checks: [{ check: 'transaction.unchanged', tenant_id: tx.tenant_id, id: tx.id, transaction: tx }],
      ops: [{ op: 'transaction.delete', tenant_id: tx.tenant_id, id: tx.id }],
    })
    return result.ok
  })
  const idempotency = await drain(store, 'idempotency', now, batch, (key) =>
    deleteIdempotency(store, now, key),
  )
  return { sessions, applications, transactions, tokens, cvcs, endedTransactions, idempotency }
}
