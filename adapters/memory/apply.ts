import type {
  Association,
  FormulaUse,
  StagedWrite,
  StoredApplication,
  StoredSession,
  StoredToken,
  StoredTransaction,
} from '../../src/kernel/index.js'
import type { Op, TokenOp } from '../../src/store/index.js'
import { applicationKeyHashes, SortedIds, stagedCharsHeld } from '../../src/store/index.js'
import * as clientKeys from './client-keys.js'
import * as documents from './documents.js'
import * as logs from './logs.js'
import { linkKey, type MemoryMaps, needsCheck, placeKey } from './maps.js'
import * as outbox from './outbox.js'
import * as proxies from './proxies.js'
import * as intents from './token-intents.js'

/** The ops of the records kept in maps of their own (`applyFeatureOp`). */
type FeatureOp = Extract<
  Op,
  {
    op: `${'proxy' | 'webhook' | 'outbox' | 'log' | 'document' | 'document_chunk' | 'token_intent'}.${'put' | 'delete'}`
  }
>

const FEATURE_OPS: ReadonlySet<string> = new Set<FeatureOp['op']>([
  'proxy.put',
  'proxy.delete',
  'webhook.put',
  'webhook.delete',
  'outbox.put',
  'outbox.delete',
  'log.put',
  'log.delete',
  'document.put',
  'document_chunk.put',
  'document.delete',
  'token_intent.put',
  'token_intent.delete',
])

/** Whether `op` is one `applyFeatureOp` applies. */
const isFeatureOp = (op: Op): op is FeatureOp => FEATURE_OPS.has(op.op)

/** Applies one op to the maps. Ops are total: applying one never fails. */
export function applyOp(m: MemoryMaps, op: Op): void {
  if (isFeatureOp(op)) {
    applyFeatureOp(m, op)
    return
  }
  switch (op.op) {
    case 'tenant.put':
      m.tenants.set(op.tenant.id, op.tenant)
      return
    case 'tenant.delete':
      m.tenants.delete(op.id)
      return
    case 'application.put':
      putApplication(m, op.application)
      return
    case 'application.delete':
      deleteApplication(m, op)
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
      applyTokenOp(m, op)
      return
    case 'session.put':
      putSession(m, op.session)
      return
    case 'session.delete': {
      dropSessionIndexes(m, op.tenant_id, op.id)
      m.sessions.delete(op.tenant_id, op.id)
      return
    }
    case 'formula.put':
      m.formulas.set(op.formula.tenant_id, op.formula.id, op.formula)
      return
    case 'formula.delete':
      m.formulas.delete(op.tenant_id, op.id)
      return
    case 'reactor.put': {
      const r = op.reactor
      m.reactors.set(r.tenant_id, r.id, r)
      return
    }
    case 'reactor.delete': {
      m.reactors.delete(op.tenant_id, op.id)
      return
    }
    case 'formula_use.put':
      putFormulaUse(m, op.use)
      return
    case 'formula_use.delete':
      deleteFormulaUse(m, op)
      return
    case 'idempotency.put':
      m.idempotency.set(op.record.tenant_id, op.record.id, op.record)
      return
    case 'idempotency.delete':
      m.idempotency.delete(op.tenant_id, op.id)
      return
    default:
      // Client keys' ops, the last kind: an op not handled above fails to compile here.
      clientKeys.apply(m.clientKeys, op)
  }
}

/** The ops of tokens and what hangs on them: links, transactions, staged writes and locks. */
function applyTokenOp(m: MemoryMaps, op: TokenOp): void {
  switch (op.op) {
    case 'token.put':
      putToken(m, op.token)
      return
    case 'token.delete':
      recount(m, op.tenant_id, op.id, m.tokens.get(op.tenant_id, op.id), undefined)
      m.tokenIndex.update(op.tenant_id, op.id, m.tokens.get(op.tenant_id, op.id), undefined)
      m.tokens.delete(op.tenant_id, op.id)
      m.expiringTokens.delete(op.tenant_id, op.id)
      m.cvcTokens.delete(op.tenant_id, op.id)
      return
    case 'association.put':
      putAssociation(m, op.association)
      return
    case 'association.delete':
      unlink(m, op.tenant_id, op.parent_id, op.child_id)
      return
    case 'transaction.put':
      setTransaction(m, op.transaction.tenant_id, op.transaction.id, op.transaction)
      return
    case 'transaction.delete':
      setTransaction(m, op.tenant_id, op.id, undefined)
      return
    case 'staged.put':
      putStaged(m, op.staged)
      return
    case 'staged.delete':
      deleteStaged(m, op)
      return
    case 'lock.put':
      m.locks.set(op.lock.tenant_id, op.lock.token_id, op.lock)
      return
    case 'lock.delete':
      m.locks.delete(op.tenant_id, op.token_id)
      return
  }
}

/** The ops of the proxy, webhook, outbox, audit-log and document records, each kept in its own maps. */
function applyFeatureOp(m: MemoryMaps, op: FeatureOp): void {
  switch (op.op) {
    case 'token_intent.put':
      intents.put(m.intents, op.intent)
      return
    case 'token_intent.delete':
      intents.remove(m.intents, op.tenant_id, op.id)
      return
    case 'document.put':
      documents.put(m.documents, op.document)
      return
    case 'document_chunk.put':
      documents.putChunk(m.documents, op.chunk)
      return
    case 'document.delete':
      documents.remove(m.documents, op.tenant_id, op.id)
      return
    case 'proxy.put':
      proxies.put(m.proxies, op.proxy)
      return
    case 'proxy.delete':
      proxies.remove(m.proxies, op.tenant_id, op.id)
      return
    case 'webhook.put':
      m.hooks.webhooks.set(op.webhook.tenant_id, op.webhook.id, op.webhook)
      return
    case 'webhook.delete':
      m.hooks.webhooks.delete(op.tenant_id, op.id)
      return
    case 'outbox.put':
      outbox.putEntry(m.hooks, op.entry)
      return
    case 'outbox.delete':
      outbox.deleteEntry(m.hooks, op.tenant_id, op.id)
      return
    case 'log.put':
      logs.put(m.logs, op.entry)
      return
    case 'log.delete':
      logs.remove(m.logs, op.tenant_id, op.id)
      return
  }
}

/** Puts an application; its old key hashes go, its current ones point at it. */
function putApplication(m: MemoryMaps, a: StoredApplication): void {
  const old = m.applications.get(a.tenant_id, a.id)
  if (old) for (const hash of applicationKeyHashes(old)) m.keys.delete(hash)
  m.applications.set(a.tenant_id, a.id, a)
  for (const hash of applicationKeyHashes(a)) {
    m.keys.set(hash, { kind: 'application', tenantId: a.tenant_id, id: a.id })
  }
}

/** Deletes an application and its key hashes. */
function deleteApplication(m: MemoryMaps, op: { tenant_id: string; id: string }): void {
  const old = m.applications.get(op.tenant_id, op.id)
  if (old) for (const hash of applicationKeyHashes(old)) m.keys.delete(hash)
  m.applications.delete(op.tenant_id, op.id)
}

/** Puts a token with its index entries, its expiry lists and its parents' counts. */
function putToken(m: MemoryMaps, t: StoredToken): void {
  const old = m.tokens.get(t.tenant_id, t.id)
  m.tokenIndex.update(t.tenant_id, t.id, old, t)
  m.tokens.set(t.tenant_id, t.id, t)
  if (t.expires_at !== undefined) m.expiringTokens.set(t.tenant_id, t.id, t)
  else if (old?.expires_at !== undefined) m.expiringTokens.delete(t.tenant_id, t.id)
  if (t.cvc_expires_at !== undefined) m.cvcTokens.set(t.tenant_id, t.id, t)
  else if (old?.cvc_expires_at !== undefined) m.cvcTokens.delete(t.tenant_id, t.id)
  recount(m, t.tenant_id, t.id, old, t)
}

/** Links a child to a parent (once), in link order, counted and indexed both ways. */
function putAssociation(m: MemoryMaps, a: Association): void {
  const tenant = a.tenant_id
  let kids = m.children.get(tenant, a.parent_id)
  if (!kids) {
    kids = new Map<string, Association>()
    m.children.set(tenant, a.parent_id, kids)
  }
  if (kids.has(a.child_id)) return
  kids.set(a.child_id, a)
  const seq = m.nextLink++
  m.linkOrder.set(linkKey(tenant, a.parent_id, a.child_id), seq)
  let order = m.childOrder.get(tenant, a.parent_id)
  if (!order) {
    order = { keys: new SortedIds(), ids: new Map() }
    m.childOrder.set(tenant, a.parent_id, order)
  }
  order.keys.add(placeKey(seq))
  order.ids.set(placeKey(seq), a.child_id)
  if (needsCheck(m.tokens.get(tenant, a.child_id))) countExpiring(m, tenant, a.parent_id, 1)
  let ps = m.parents.get(tenant, a.child_id)
  if (!ps) {
    ps = new Set<string>()
    m.parents.set(tenant, a.child_id, ps)
  }
  ps.add(a.parent_id)
}

/** Stages a write in its transaction, in token id order. */
function putStaged(m: MemoryMaps, w: StagedWrite): void {
  let held = m.staged.get(w.tenant_id, w.transaction_id)
  if (!held) {
    held = { ids: new SortedIds(), records: new Map() }
    m.staged.set(w.tenant_id, w.transaction_id, held)
  }
  held.ids.add(w.token_id)
  held.records.set(w.token_id, w)
}

/** Drops a staged write (and the transaction's entry once it holds none). */
function deleteStaged(
  m: MemoryMaps,
  op: { tenant_id: string; transaction_id: string; token_id: string },
): void {
  const held = m.staged.get(op.tenant_id, op.transaction_id)
  if (!held?.records.delete(op.token_id)) return
  held.ids.delete(op.token_id)
  if (!held.records.size) m.staged.delete(op.tenant_id, op.transaction_id)
}

/** Puts a session with its key hash and nonce indexes. */
function putSession(m: MemoryMaps, s: StoredSession): void {
  dropSessionIndexes(m, s.tenant_id, s.id)
  if (s.state === 'created') countCreated(m, s.tenant_id, 1)
  m.sessions.set(s.tenant_id, s.id, s)
  m.keys.set(s.key_hash, { kind: 'session', tenantId: s.tenant_id, id: s.id })
  m.nonces.set(s.tenant_id, s.nonce_hash, s.id)
}

/** Records that a reactor uses a formula (once). */
function putFormulaUse(m: MemoryMaps, u: FormulaUse): void {
  let uses = m.formulaUses.get(u.formula_id)
  if (!uses) {
    uses = new Map()
    m.formulaUses.set(u.formula_id, uses)
  }
  const key = `${u.tenant_id}\u0000${u.reactor_id}`
  if (!uses.has(key)) uses.set(key, u)
}

/** Forgets that a reactor uses a formula. */
function deleteFormulaUse(
  m: MemoryMaps,
  op: { formula_id: string; tenant_id: string; reactor_id: string },
): void {
  const uses = m.formulaUses.get(op.formula_id)
  uses?.delete(`${op.tenant_id}\u0000${op.reactor_id}`)
  if (uses?.size === 0) m.formulaUses.delete(op.formula_id)
}

function dropSessionIndexes(m: MemoryMaps, tenantId: string, id: string) {
  const old = m.sessions.get(tenantId, id)
  if (!old) return
  if (old.state === 'created') countCreated(m, tenantId, -1)
  m.keys.delete(old.key_hash)
  m.nonces.delete(old.tenant_id, old.nonce_hash)
}

function countCreated(m: MemoryMaps, tenantId: string, delta: number) {
  addTo(m.createdSessions, tenantId, delta)
}

/** Moves a tenant's count in `counts` by `delta`, dropping it at zero. */
function addTo(counts: Map<string, number>, tenantId: string, delta: number) {
  const n = (counts.get(tenantId) ?? 0) + delta
  if (n > 0) counts.set(tenantId, n)
  else counts.delete(tenantId)
}

/** Puts (`next`) or deletes (`undefined`) a transaction, moving its tenant's staged count by the change. */
function setTransaction(m: MemoryMaps, tenantId: string, id: string, next: StoredTransaction | undefined) {
  const delta = stagedCharsHeld(next) - stagedCharsHeld(m.transactions.get(tenantId, id))
  if (delta !== 0) addTo(m.stagedChars, tenantId, delta)
  if (next) m.transactions.set(tenantId, id, next)
  else m.transactions.delete(tenantId, id)
}

function countExpiring(m: MemoryMaps, tenantId: string, parentId: string, delta: number) {
  const n = (m.expiring.get(tenantId, parentId) ?? 0) + delta
  if (n <= 0) m.expiring.delete(tenantId, parentId)
  else m.expiring.set(tenantId, parentId, n)
}

function unlink(m: MemoryMaps, tenantId: string, parentId: string, childId: string) {
  const kids = m.children.get(tenantId, parentId)
  const link = kids?.get(childId)
  if (!link || !kids?.delete(childId)) return
  const order = m.childOrder.get(tenantId, parentId)
  const key = linkKey(tenantId, parentId, childId)
  const place = placeKey(m.linkOrder.get(key) ?? -1)
  m.linkOrder.delete(key)
  order?.keys.delete(place)
  order?.ids.delete(place)
  if (order?.keys.size === 0) m.childOrder.delete(tenantId, parentId)
  if (kids.size === 0) m.children.delete(tenantId, parentId)
  if (needsCheck(m.tokens.get(tenantId, childId))) countExpiring(m, tenantId, parentId, -1)
  const ps = m.parents.get(tenantId, childId)
  ps?.delete(parentId)
  if (ps?.size === 0) m.parents.delete(tenantId, childId)
}

/** Keeps the parents' counts of children to check (see `expiring`) as a child goes from `old` to `next`. */
function recount(
  m: MemoryMaps,
  tenantId: string,
  id: string,
  old: StoredToken | undefined,
  next: StoredToken | undefined,
) {
  const was = needsCheck(old)
  const is = needsCheck(next)
  if (was === is) return
  for (const parentId of m.parents.get(tenantId, id) ?? []) countExpiring(m, tenantId, parentId, is ? 1 : -1)
}
