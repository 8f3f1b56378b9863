import { asBinary, type Database } from 'lmdb'
import type {
  Association,
  IdempotencyRecord,
  StoredApplication,
  StoredSession,
  StoredToken,
  StoredTransaction,
} from '../../src/kernel/index.js'
import type { CountedKind, Op, TokenOp } from '../../src/store/index.js'
import { applicationKeyHashes, stagedCharsHeld, termKeysOf } from '../../src/store/index.js'
import { applyClientKeyOp } from './client-keys.js'
import { applyDocumentOp } from './documents.js'
import type { Databases } from './env.js'
import { key, seq, termPart, tokenCountKey } from './keys.js'
import { applyLogOp, writeLogCounts } from './logs.js'
import { applyWebhookOp } from './outbox.js'
import { applyProxyOp } from './proxies.js'
import { applyTokenIntentOp } from './token-intents.js'

/** What an `expiring` entry names. */
export interface Expiring {
  tenant_id: string
  id: string
  at: string
}

const LINK_SEQ = Buffer.from('linkSeq')

/** The `meta` key of a tenant's count of `kind` (`countRecords`). */
export const countKey = (kind: CountedKind, tenantId: string): Buffer => key('count', kind, tenantId)

/** Moves a tenant's count of `kind` by `delta`, in the current write transaction. */
function count(dbs: Databases, kind: CountedKind, tenantId: string, delta: number) {
  const k = countKey(kind, tenantId)
  const n = ((dbs.meta.get(k) as number | undefined) ?? 0) + delta
  if (n > 0) dbs.meta.put(k, n)
  else dbs.meta.remove(k)
}

/** A link as the `links` database keeps it: the association and its place in link order. */
export interface StoredLink {
  association: Association
  seq: number
}

/** Keeps one `expiring` entry of `kind` in step as a record's time goes from `old` to `next`. */
function reindexTime(
  dbs: Databases,
  kind: string,
  tenantId: string,
  id: string,
  old?: string,
  next?: string,
) {
  if (old === next) return
  if (old !== undefined) dbs.expiring.remove(key(kind, old, tenantId, id))
  if (next !== undefined)
    dbs.expiring.put(key(kind, next, tenantId, id), { tenant_id: tenantId, id, at: next })
}

/** Adds (`on`) or removes a `[tenant, term, id]` index entry. */
function term(db: Database, on: boolean, tenantId: string, value: string | undefined, id: string) {
  if (value === undefined) return
  if (on) db.put(key(tenantId, value, id), 1)
  else db.remove(key(tenantId, value, id))
}

/** Keeps a token's entries in the `terms` index in step as it goes from `old` to `next`. */
function reindexTerms(
  dbs: Databases,
  tenantId: string,
  id: string,
  old: StoredToken | undefined,
  next: StoredToken | undefined,
) {
  const before = old ? termKeysOf(old) : new Set<string>()
  const after = next ? termKeysOf(next) : new Set<string>()
  for (const t of before) if (!after.has(t)) dbs.terms.remove(key(tenantId, termPart(t), id))
  for (const t of after) if (!before.has(t)) dbs.terms.put(key(tenantId, termPart(t), id), 1)
}

const txKind = (t: StoredTransaction | undefined) =>
  t === undefined ? undefined : t.state === 'open' ? 'transaction.open' : 'transaction.ended'

/** Adds `delta` to the tenant's token count in `meta` (what an unfiltered v1 list's total starts from). */
function recount(dbs: Databases, tenantId: string, delta: number) {
  const k = tokenCountKey(tenantId)
  const n = ((dbs.meta.get(k) as number | undefined) ?? 0) + delta
  if (n > 0) dbs.meta.put(k, n)
  else dbs.meta.remove(k)
}

/** Puts `t`, as `record` when it was encoded already (`tokenRecords`). */
function putToken(dbs: Databases, t: StoredToken, record?: Uint8Array) {
  const k = key(t.tenant_id, t.id)
  const old = dbs.tokens.get(k) as StoredToken | undefined
  if (!old) recount(dbs, t.tenant_id, 1)
  if (old?.expires_at !== t.expires_at) {
    term(dbs.tokenExpiry, false, t.tenant_id, old?.expires_at, t.id)
    term(dbs.tokenExpiry, true, t.tenant_id, t.expires_at, t.id)
  }
  reindexTerms(dbs, t.tenant_id, t.id, old, t)
  reindexTime(dbs, 'token', t.tenant_id, t.id, old?.expires_at, t.expires_at)
  reindexTime(dbs, 'token.cvc', t.tenant_id, t.id, old?.cvc_expires_at, t.cvc_expires_at)
  dbs.tokens.put(k, record ? asBinary(record) : t)
}

function deleteToken(dbs: Databases, tenantId: string, id: string) {
  const k = key(tenantId, id)
  const old = dbs.tokens.get(k) as StoredToken | undefined
  if (!old) return
  recount(dbs, tenantId, -1)
  term(dbs.tokenExpiry, false, tenantId, old.expires_at, id)
  reindexTerms(dbs, tenantId, id, old, undefined)
  reindexTime(dbs, 'token', tenantId, id, old.expires_at, undefined)
  reindexTime(dbs, 'token.cvc', tenantId, id, old.cvc_expires_at, undefined)
  dbs.tokens.remove(k)
}

function putLink(dbs: Databases, a: Association) {
  const k = key(a.tenant_id, a.parent_id, a.child_id)
  if (dbs.links.get(k) !== undefined) return
  const n = ((dbs.meta.get(LINK_SEQ) as number | undefined) ?? 0) + 1
  dbs.meta.put(LINK_SEQ, n)
  dbs.links.put(k, { association: a, seq: n } satisfies StoredLink)
  dbs.children.put(key(a.tenant_id, a.parent_id, seq(n)), a.child_id)
  dbs.parents.put(key(a.tenant_id, a.child_id, a.parent_id), 1)
}

function deleteLink(dbs: Databases, tenantId: string, parentId: string, childId: string) {
  const k = key(tenantId, parentId, childId)
  const link = dbs.links.get(k) as StoredLink | undefined
  if (!link) return
  dbs.links.remove(k)
  dbs.children.remove(key(tenantId, parentId, seq(link.seq)))
  dbs.parents.remove(key(tenantId, childId, parentId))
}

function dropSession(dbs: Databases, tenantId: string, id: string) {
  const k = key(tenantId, id)
  const old = dbs.sessions.get(k) as StoredSession | undefined
  if (!old) return
  if (old.state === 'created') count(dbs, 'session.created', tenantId, -1)
  dbs.keys.remove(key(old.key_hash))
  dbs.nonces.remove(key(tenantId, old.nonce_hash))
  reindexTime(dbs, 'session', tenantId, id, old.expires_at, undefined)
  dbs.sessions.remove(k)
}

/** A record with an optional expiry, as `expiring` indexes applications and idempotency records. */
type Timed = { expires_at?: string } | undefined

/** Puts (`next`) or deletes (`undefined`) an application with its key hashes and expiry entry. */
function setApplication(
  dbs: Databases,
  tenantId: string,
  id: string,
  next: StoredApplication | undefined,
): void {
  const k = key(tenantId, id)
  const old = dbs.applications.get(k) as Parameters<typeof applicationKeyHashes>[0] | undefined
  if (old) for (const hash of applicationKeyHashes(old)) dbs.keys.remove(key(hash))
  reindexTime(dbs, 'application', tenantId, id, (old as Timed)?.expires_at, (next as Timed)?.expires_at)
  if (!next) {
    dbs.applications.remove(k)
    return
  }
  dbs.applications.put(k, next)
  for (const hash of applicationKeyHashes(next))
    dbs.keys.put(key(hash), { kind: 'application', tenant_id: tenantId, id })
}

/**
 * Puts (`next`) or deletes (`undefined`) a transaction with its entry in the expiry index of its
 * state, moving its tenant's `transaction.staged` count by the change.
 */
function setTransaction(
  dbs: Databases,
  tenantId: string,
  id: string,
  next: StoredTransaction | undefined,
): void {
  const k = key(tenantId, id)
  const old = dbs.transactions.get(k) as StoredTransaction | undefined
  if (old) reindexTime(dbs, txKind(old)!, tenantId, id, old.expires_at, undefined)
  const delta = stagedCharsHeld(next) - stagedCharsHeld(old)
  if (delta !== 0) count(dbs, 'transaction.staged', tenantId, delta)
  if (!next) {
    dbs.transactions.remove(k)
    return
  }
  reindexTime(dbs, txKind(next)!, tenantId, id, undefined, next.expires_at)
  dbs.transactions.put(k, next)
}

/** Puts a session with its key hash, nonce, expiry entry and the tenant's count of created sessions. */
function putSession(dbs: Databases, s: StoredSession): void {
  dropSession(dbs, s.tenant_id, s.id)
  if (s.state === 'created') count(dbs, 'session.created', s.tenant_id, 1)
  dbs.sessions.put(key(s.tenant_id, s.id), s)
  dbs.keys.put(key(s.key_hash), { kind: 'session', tenant_id: s.tenant_id, id: s.id })
  dbs.nonces.put(key(s.tenant_id, s.nonce_hash), s.id)
  reindexTime(dbs, 'session', s.tenant_id, s.id, undefined, s.expires_at)
}

/** Puts (`next`) or deletes (`undefined`) an idempotency record with its expiry entry and the tenant's count. */
function setIdempotency(
  dbs: Databases,
  tenantId: string,
  id: string,
  next: IdempotencyRecord | undefined,
): void {
  const k = key(tenantId, id)
  const old = dbs.idempotency.get(k) as Timed
  reindexTime(dbs, 'idempotency', tenantId, id, old?.expires_at, next?.expires_at)
  if ((old === undefined) !== (next === undefined))
    count(dbs, 'idempotency', tenantId, next === undefined ? -1 : 1)
  if (next) dbs.idempotency.put(k, next)
  else dbs.idempotency.remove(k)
}

/**
 * Applies a write's ops inside the current write transaction, in order (see `applyOp`); the audit
 * log's counts of entries move once per tenant at the end (`writeLogCounts`).
 */
export function applyOps(
  dbs: Databases,
  ops: readonly Op[],
  records: readonly (Uint8Array | undefined)[] | null = null,
): void {
  const logCounts = new Map<string, number>()
  ops.forEach((op, i) => {
    const record = records?.[i]
    if (record && op.op === 'token.put') putToken(dbs, op.token, record)
    else applyOp(dbs, op, logCounts)
  })
  writeLogCounts(dbs, logCounts)
}

/**
 * Applies one op inside the current write transaction, keeping every index of the record it names
 * in the same transaction. Total, as the memory state's: applying an op never fails on its content.
 */
function applyOp(dbs: Databases, op: Op, logCounts: Map<string, number>): void {
  if (applyDocumentOp(dbs, op)) return
  switch (op.op) {
    case 'tenant.put':
      dbs.tenants.put(key(op.tenant.id), op.tenant)
      return
    case 'tenant.delete':
      dbs.tenants.remove(key(op.id))
      return
    case 'application.put':
      setApplication(dbs, op.application.tenant_id, op.application.id, op.application)
      return
    case 'application.delete':
      setApplication(dbs, op.tenant_id, op.id, undefined)
      return
    case 'token.put':
    case 'token.delete':
    case 'association.put':
    case 'association.delete':
    case 'transaction.put':
    case 'transaction.delete':
    case 'staged.put':
    case 'staged.delete':
    case 'lock.put':
    case 'lock.delete':
      applyTokenOp(dbs, op)
      return
    case 'session.put':
      putSession(dbs, op.session)
      return
    case 'session.delete':
      dropSession(dbs, op.tenant_id, op.id)
      return
    case 'formula.put':
      dbs.formulas.put(key(op.formula.tenant_id ?? '', op.formula.id), op.formula)
      return
    case 'formula.delete':
      dbs.formulas.remove(key(op.tenant_id ?? '', op.id))
      return
    case 'reactor.put':
      dbs.reactors.put(key(op.reactor.tenant_id, op.reactor.id), op.reactor)
      return
    case 'reactor.delete':
      dbs.reactors.remove(key(op.tenant_id, op.id))
      return
    case 'formula_use.put':
      dbs.uses.put(key(op.use.formula_id, op.use.tenant_id, op.use.reactor_id), op.use)
      return
    case 'formula_use.delete':
      dbs.uses.remove(key(op.formula_id, op.tenant_id, op.reactor_id))
      return
    case 'idempotency.put':
      setIdempotency(dbs, op.record.tenant_id, op.record.id, op.record)
      return
    case 'idempotency.delete':
      setIdempotency(dbs, op.tenant_id, op.id, undefined)
      return
    case 'proxy.put':
    case 'proxy.delete':
      applyProxyOp(dbs, op)
      return
    case 'token_intent.put':
    case 'token_intent.delete':
      applyTokenIntentOp(dbs, op, reindexTime)
      return
    case 'webhook.put':
    case 'webhook.delete':
    case 'outbox.put':
    case 'outbox.delete':
      applyWebhookOp(dbs, op, count, reindexTime)
      return
    case 'log.put':
    case 'log.delete':
      applyLogOp(dbs, op, logCounts)
      return
    default:
      // Client keys' ops, the last kind: an op not handled above fails to compile here.
      applyClientKeyOp(dbs, op)
  }
}

/** The ops of tokens and what hangs on them: links, transactions, staged writes and locks. */
function applyTokenOp(dbs: Databases, op: TokenOp): void {
  switch (op.op) {
    case 'token.put':
      putToken(dbs, op.token)
      return
    case 'token.delete':
      deleteToken(dbs, op.tenant_id, op.id)
      return
    case 'association.put':
      putLink(dbs, op.association)
      return
    case 'association.delete':
      deleteLink(dbs, op.tenant_id, op.parent_id, op.child_id)
      return
    case 'transaction.put':
      setTransaction(dbs, op.transaction.tenant_id, op.transaction.id, op.transaction)
      return
    case 'transaction.delete':
      setTransaction(dbs, op.tenant_id, op.id, undefined)
      return
    case 'staged.put': {
      const w = op.staged
      dbs.staged.put(key(w.tenant_id, w.transaction_id, w.token_id), w)
      return
    }
    case 'staged.delete':
      dbs.staged.remove(key(op.tenant_id, op.transaction_id, op.token_id))
      return
    case 'lock.put':
      dbs.locks.put(key(op.lock.tenant_id, op.lock.token_id), op.lock)
      return
    case 'lock.delete':
      dbs.locks.remove(key(op.tenant_id, op.token_id))
      return
  }
}
