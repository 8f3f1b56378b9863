import type { StoredToken } from '../kernel/index.js'
import { isoAfter, ServiceError } from '../kernel/index.js'
import { reindexed } from '../search/index.js'
import type { ExpiringKind, RecordKey, Store } from '../store/index.js'
import { StoreError } from '../store/index.js'
import { clearStaged, deletionsWithLinks, writeDiscard } from '../transactions/index.js'

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
  /** Token intents deleted at their `expires_at` (a day after they were made). */
  tokenIntents: number
  /** How many records (or steps) failed and were skipped; absent when none did. */
  failed?: number
  /** The first 100 of those failures (absent when none): each step and record isolated from the others. */
  failures?: SweepFailure[]
}

/** What the sweep was doing when something failed: a step (a kind of record) and the record, if one. */
export interface SweepFailure {
  step: ExpiringKind
  /** The record that failed (absent: the step itself, e.g. its listing, failed). */
  tenant_id?: string
  id?: string
  /** The error's name and code (and message, for the core's and the stores' errors, which name no secret). */
  error: string
}

/** How many failures one sweep reports at most (the rest are counted in `failed` only). */
const MAX_REPORTED = 100

/**
 * How many records of one step the sweep may leave as they are (not due after all, held by an open
 * transaction, or failing) and still list past: beyond, the step ends for this sweep (reported).
 */
const MAX_PASSED = 16 * SWEEP_BATCH

/** Failures of one sweep, as it reports them. */
class Failures {
  readonly list: SweepFailure[] = []
  count = 0

  add(step: ExpiringKind, error: unknown, key?: RecordKey): void {
    this.note(step, described(error), key)
  }

  note(step: ExpiringKind, error: string, key?: RecordKey): void {
    this.count++
    if (this.list.length < MAX_REPORTED)
      this.list.push({ step, ...(key ? { tenant_id: key.tenant_id, id: key.id } : {}), error })
  }
}

/** An error as a failure names it: never a stored value (errors of other kinds give their name only). */
function described(error: unknown): string {
  if (error instanceof ServiceError || error instanceof StoreError)
    return `${error.name} ${error.code}: ${error.message}`
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return typeof code === 'string' ? `${error.name} ${code}` : error.name
  }
  return typeof error
}

/**
 * Lists records of one kind in bounded batches and hands each to `act`, which answers whether it
 * changed it. Each record is tried on its own: one that throws is reported in `failures` and left,
 * and so is one `act` leaves as it is (not due, held by a transaction); both are listed past
 * (the next listing asks for as many more), so they never hold back the records listed after them,
 * whichever tenant's. Stops once a listing comes back short or brings nothing new, or after
 * `MAX_PASSED` records were left (reported).
 */
async function drain(
  store: Store,
  kind: ExpiringKind,
  before: string,
  batch: number,
  failures: Failures,
  act: (key: RecordKey) => Promise<boolean>,
): Promise<number> {
  const passed = new Set<string>()
  let total = 0
  for (;;) {
    const limit = batch + passed.size
    const keys = await store.listExpired({ kind, before, limit })
    const fresh = keys.filter((k) => !passed.has(`${k.tenant_id}\u0000${k.id}`))
    for (const key of fresh) {
      let changed = false
      try {
        changed = await act(key)
      } catch (error) {
        failures.add(kind, error, key)
      }
      if (changed) total++
      else passed.add(`${key.tenant_id}\u0000${key.id}`)
    }
    if (keys.length < limit || !fresh.length) return total
    if (passed.size >= MAX_PASSED) {
      failures.note(
        kind,
        `more than ${MAX_PASSED} records left as they are: the rest wait for the next sweep`,
      )
      return total
    }
  }
}

/** Runs one step of the sweep; a step that throws counts what it did as 0 and is reported. */
async function step(kind: ExpiringKind, failures: Failures, run: () => Promise<number>): Promise<number> {
  try {
    return await run()
  } catch (error) {
    failures.add(kind, error)
    return 0
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
    try {
      if (await (kind === 'session' ? deleteSession(store, key) : deleteIdempotency(store, now, key)))
        deleted++
    } catch {
      // One record that can't be deleted (any tenant's) does not fail the caller's request: skipped.
    }
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
 * - Token intents are deleted at their `expires_at` (a day after they were made).
 * - Transactions are deleted `ENDED_RETENTION_MS` after they ended, with any staged record or lock
 *   an end cut short left behind. A transaction ends at the latest when it expires, so candidates
 *   are listed by `expires_at` up to `now − 24 h + transactionTtlMs` and each is checked against its
 *   own `ended_at`.
 *
 * Each step and each record is isolated: a record whose read or write throws (the store refusing
 * one transaction's end, a record it can't read) is skipped and reported, a step whose listing
 * throws is reported, and every other record and step still runs, whichever tenant's. Nothing is
 * thrown: failures come back in `failed` and `failures` (absent when none), for the host to log.
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
  const failures = new Failures()
  const each = (kind: ExpiringKind, before: string, act: (key: RecordKey) => Promise<boolean>) =>
    step(kind, failures, () => drain(store, kind, before, batch, failures, act))
  const sessions = await each('session', now, (key) => deleteSession(store, key))
  const applications = await each('application', now, (key) => deleteApplication(store, now, key))
  const transactions = await each('transaction.open', now, (key) => expireTransaction(store, now, key))
  const tokens = await each('token', now, (key) => deleteToken(store, now, key))
  const cvcs = await each('token.cvc', now, (key) => dropCvc(store, now, key, options.refingerprint))
  const cutoff = isoAfter(now, -ENDED_RETENTION_MS)
  const listedUpTo = isoAfter(cutoff, options.transactionTtlMs)
  const endedTransactions = await each('transaction.ended', listedUpTo, (key) =>
    deleteEndedTransaction(store, cutoff, key),
  )
  const idempotency = await each('idempotency', now, (key) => deleteIdempotency(store, now, key))
  const tokenIntents = await each('token_intent', now, (key) => deleteTokenIntent(store, now, key))
  const counts = {
    sessions,
    applications,
    transactions,
    tokens,
    cvcs,
    endedTransactions,
    idempotency,
    tokenIntents,
  }
  return failures.count ? { ...counts, failed: failures.count, failures: failures.list } : counts
}

/**
 * Deletes a token intent past its `expires_at` (its head read, never its data: an intent's only
 * change is its deletion, so nothing races the delete but another delete).
 */
async function deleteTokenIntent(store: Store, now: string, key: RecordKey): Promise<boolean> {
  const intent = await store.getTokenIntent(key.tenant_id, key.id)
  if (!intent || intent.expires_at > now) return false
  const result = await store.write({
    ops: [{ op: 'token_intent.delete', tenant_id: key.tenant_id, id: key.id }],
  })
  return result.ok
}

/** Deletes an application past its `expires_at` (an update keeps `expires_at`, so nothing races it). */
async function deleteApplication(store: Store, now: string, key: RecordKey): Promise<boolean> {
  const app = await store.getApplication(key.tenant_id, key.id)
  if (!app || app.expires_at === undefined || app.expires_at > now) return false
  const result = await store.write({
    checks: [{ check: 'application.present', tenant_id: app.tenant_id, id: app.id }],
    ops: [{ op: 'application.delete', tenant_id: app.tenant_id, id: app.id }],
  })
  return result.ok
}

/** Ends an open transaction past its `expires_at` as `expired`: its staged records and locks go. */
async function expireTransaction(store: Store, now: string, key: RecordKey): Promise<boolean> {
  const tx = await store.getTransaction(key.tenant_id, key.id)
  if (tx?.state !== 'open' || tx.expires_at > now) return false
  return (await writeDiscard(store, tx, 'expired', tx.expires_at)).ok
}

/** Deletes an expired token with its links, unless it changed, is held by a transaction or was linked meanwhile. */
async function deleteToken(store: Store, now: string, key: RecordKey): Promise<boolean> {
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
}

/** Rewrites a card whose `cvc_expires_at` passed without its cvc, unless it changed or is held meanwhile. */
async function dropCvc(
  store: Store,
  now: string,
  key: RecordKey,
  refingerprint: ((token: StoredToken) => Promise<StoredToken>) | undefined,
): Promise<boolean> {
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
    ops: [{ op: 'token.put', token: refingerprint ? await refingerprint(next) : next }],
  })
  return result.ok
}

/**
 * Deletes a transaction that ended before `cutoff`, with whatever it staged that is still stored
 * (an end whose clearing was cut short: see `writeDiscard`).
 */
async function deleteEndedTransaction(store: Store, cutoff: string, key: RecordKey): Promise<boolean> {
  const tx = await store.getTransaction(key.tenant_id, key.id)
  if (!tx || tx.state === 'open' || (tx.ended_at ?? tx.expires_at) > cutoff) return false
  await clearStaged(store, tx)
  const result = await store.write({
    checks: [{ check: 'transaction.unchanged', tenant_id: tx.tenant_id, id: tx.id, transaction: tx }],
    ops: [{ op: 'transaction.delete', tenant_id: tx.tenant_id, id: tx.id }],
  })
  return result.ok
}
