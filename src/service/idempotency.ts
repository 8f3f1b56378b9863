import { nanoid } from 'nanoid'
import type { Principal } from '../applications/index.js'
import type { IdempotencyRecord } from '../kernel/index.js'
import { conflict, depthOf, invalid, isoAfter, tooMany } from '../kernel/index.js'
import { sweepExpiredOf } from '../lifecycle/index.js'
import type { Store } from '../store/index.js'

/** How long the first answer to an idempotency key is kept (and replayed): 24 hours, in ms. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000

/** The default `maxIdempotencyRecordsPerTenant` of `createService`. */
export const DEFAULT_IDEMPOTENCY_RECORDS_PER_TENANT = 10_000

/** What a request refused at that bound is told: try again in a minute (records expire one by one). */
export const IDEMPOTENCY_FULL_RETRY_SEC = 60

/** The longest idempotency key accepted, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

/**
 * The longest answer kept for replay, in bytes of its JSON as UTF-8: 64 KiB. A longer answer is not
 * kept (the record remembers only that the request succeeded), so records stay small whatever a
 * caller asks for, and a store that holds them all in memory still opens. Bytes, not characters:
 * 64 Ki characters of CJK text are 192 KiB sealed (three bytes each), and 10 000 such records
 * held about 2.4 GB of one tenant's where 64 KiB each was documented.
 */
export const MAX_KEPT_ANSWER_BYTES = 64 * 1024

/**
 * Operations whose answers are never kept for replay, whatever their size: a session's create
 * answers a new session key, and the public key that makes it is shared by every browser of an
 * app, so a replay would hand one visitor's session key to another sending the same idempotency
 * key. A repeat answers 409, as for a long answer.
 */
const NEVER_REPLAYED: ReadonlySet<string> = new Set(['session.create'])

/**
 * Whether an answer (its JSON text, `undefined` for none) of `operation` is kept for replay: at most
 * `MAX_KEPT_ANSWER_BYTES` of UTF-8 (counted only when its characters could pass it), and not of an
 * operation `NEVER_REPLAYED`.
 */
export function keepsAnswer(answer: string | undefined, operation?: string): boolean {
  if (operation !== undefined && NEVER_REPLAYED.has(operation)) return false
  if (answer === undefined || answer.length <= MAX_KEPT_ANSWER_BYTES / 3) return true
  return answer.length <= MAX_KEPT_ANSWER_BYTES && Buffer.byteLength(answer, 'utf8') <= MAX_KEPT_ANSWER_BYTES
}

/** What an idempotent call tells its caller once its first request acted: whether its answer was kept. */
export interface IdempotencyOutcome {
  replayable?: boolean
}

/** What the idempotency protocol needs from the service. */
export interface IdempotencyDeps {
  store: Store
  /** The time of the call, ISO. */
  now: string
  /** How long a pending first request holds its key before a repeat may take over (ms). */
  leaseMs: number
  /** How many idempotency records the caller's tenant may hold: a new key past it answers 429. */
  maxRecords: number
  /** A keyed hash (HMAC under the tenant's key) of `value` for `purpose`. */
  hmac(tenantId: string, purpose: string, value: string): Promise<string>
}

/** How deep a request made idempotent may nest: its body's 128 levels, and the call around it. */
const MAX_REQUEST_DEPTH = 136

/** The operation a request names (`[[operation, args], transaction]`, as the client makes it), if any. */
function operationOf(request: unknown): string | undefined {
  const call = Array.isArray(request) ? request[0] : undefined
  return Array.isArray(call) && typeof call[0] === 'string' ? call[0] : undefined
}

/** The request as JSON text (what is fingerprinted); 400 for one nested past `MAX_REQUEST_DEPTH`. */
function requestText(request: unknown): string {
  if (depthOf(request, MAX_REQUEST_DEPTH) > MAX_REQUEST_DEPTH) {
    throw invalid('body', 'is nested deeper than 128 levels')
  }
  return JSON.stringify(request) ?? 'undefined'
}

/** Throws `validation_failed` unless `key` is a usable idempotency key (1–255 characters). */
export function requireIdempotencyKey(key: string): void {
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalid('idempotency_key', `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`)
  }
}

/**
 * Runs `run` at most once per (caller, idempotency key) within 24 hours, as the reference
 * documents idempotency: the first request's successful answer is kept and every repeat of the same
 * request answers it without acting again; a repeat while the first is still running answers 409; the
 * same key with a different request answers 400; a request that failed keeps nothing (a repeat runs
 * anew). `request` identifies the request (operation and arguments); only keyed hashes of it and of
 * the key are stored, and the answer is stored as JSON text, which the sealed store encrypts. An
 * answer longer than `MAX_KEPT_ANSWER_BYTES` (UTF-8) is not kept: a repeat of that request answers 409 (it
 * acted once already and can't be replayed) instead of the answer.
 *
 * The key is claimed with a guarded write (`idempotency.absent`, or `idempotency.claimed` to take
 * over an expired record or a pending one whose lease ran out — its request presumed dead), so of
 * concurrent first requests, in one process or several sharing a store, exactly one runs.
 */
export async function idempotent<T>(
  deps: IdempotencyDeps,
  principal: Principal,
  key: string,
  request: unknown,
  run: () => Promise<T>,
  outcome?: IdempotencyOutcome,
): Promise<T> {
  requireIdempotencyKey(key)
  const { store, now } = deps
  const tenant = principal.tenantId
  const id = await deps.hmac(tenant, 'idempotency-key', `${principal.kind}\u0000${principal.id}\u0000${key}`)
  const fingerprint = await deps.hmac(tenant, 'idempotency-request', requestText(request))
  const claim = nanoid()
  const pending: IdempotencyRecord = {
    tenant_id: tenant,
    id,
    state: 'pending',
    claim,
    request: fingerprint,
    created_at: now,
    lease_until: isoAfter(now, deps.leaseMs),
    expires_at: isoAfter(now, IDEMPOTENCY_RETENTION_MS),
  }

  for (let attempt = 0; ; attempt++) {
    const held = await store.getIdempotency(tenant, id)
    const usable = held && held.expires_at > now && (held.state === 'done' || held.lease_until > now)
    if (held && usable) {
      if (held.request !== fingerprint) {
        throw invalid('idempotency_key', 'was used with a different request within the last 24 hours')
      }
      if (held.state === 'pending') throw conflict('a request with this idempotency key is in progress')
      if (held.answer_not_kept) {
        throw conflict(
          `the request with this idempotency key succeeded, but its answer is not kept for replay: longer than the ${MAX_KEPT_ANSWER_BYTES} bytes kept, or a new session's key`,
        )
      }
      return (held.answer === undefined ? undefined : JSON.parse(held.answer)) as T
    }
    // A new key adds a record: refused at the tenant's bound, before anything acts. (Replacing an
    // expired or abandoned record adds none.) Concurrent first requests may pass the bound by at
    // most their number.
    // At the bound, expired records are swept first (the host may never sweep), then counted again.
    const full = async () => (await store.countRecords(tenant, 'idempotency')) >= deps.maxRecords
    if (
      !held &&
      (await full()) &&
      ((await sweepExpiredOf(store, 'idempotency', now)) === 0 || (await full()))
    ) {
      throw tooMany(
        `this tenant holds ${deps.maxRecords} idempotency records, the most it may; each is kept 24 hours after its first request`,
        IDEMPOTENCY_FULL_RETRY_SEC,
      )
    }
    const claimed = await store.write({
      checks: [
        held
          ? { check: 'idempotency.claimed', tenant_id: tenant, id, claim: held.claim }
          : { check: 'idempotency.absent', tenant_id: tenant, id },
      ],
      ops: [{ op: 'idempotency.put', record: pending }],
    })
    if (claimed.ok) break
    // Another request claimed it meanwhile: read again and answer as it says.
    if (attempt >= 2) throw conflict('a request with this idempotency key is in progress')
  }

  const mine = { check: 'idempotency.claimed' as const, tenant_id: tenant, id, claim }
  let result: T
  try {
    result = await run()
  } catch (error) {
    // A failed request keeps nothing: a repeat is processed as a new request.
    await store
      .write({ checks: [mine], ops: [{ op: 'idempotency.delete', tenant_id: tenant, id }] })
      .catch(() => {})
    throw error
  }
  const answer = JSON.stringify(result)
  const kept = keepsAnswer(answer, operationOf(request))
  if (outcome) outcome.replayable = kept
  const done: IdempotencyRecord = {
    ...pending,
    state: 'done',
    ...(answer === undefined ? {} : kept ? { answer } : { answer_not_kept: true }),
  }
  // The request acted: its answer stands even if keeping it fails (a repeat then waits out the lease).
  await store.write({ checks: [mine], ops: [{ op: 'idempotency.put', record: done }] }).catch(() => {})
  return result
}
