import type {
  Association,
  FormulaUse,
  IdempotencyRecord,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
  Tenant,
  TokenLock,
} from '../../src/kernel/index.js'
import { tokenHead } from '../../src/kernel/index.js'
import type { KeyOwner, Op, TokenHead, TokenOp } from '../../src/store/index.js'
import { applicationKeyHashes, copy, Scoped, SortedIds, TokenIndex } from '../../src/store/index.js'
import { ClientKeyMaps } from './client-keys.js'
import { DocumentMaps } from './documents.js'
import { LogMaps } from './logs.js'
import { WebhookMaps } from './outbox.js'
import { ProxyMaps } from './proxies.js'
import { TokenIntentMaps } from './token-intents.js'

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

/** Whether a parent's child list must look at this child: absent, or with an expiry. */
export const needsCheck = (child: StoredToken | undefined) =>
  child === undefined || child.expires_at !== undefined

/** A link's place in its parent's order (`ChildKey.key`): its sequence number, zero-padded to sort as text. */
export const placeKey = (seq: number) => String(seq).padStart(16, '0')

/** A token's head: every field but `data` and `mask`, copied. */
export function headOf(token: StoredToken): TokenHead {
  return copy(tokenHead(token))
}

/** A sort key joining a tenant and an id (official formulas have no tenant). */
export const k = (tenantId: string | null, id: string) => `${tenantId ?? ''}\u0000${id}`

/** The maps a memory state keeps its records and indexes in, and the bookkeeping ops share. */
export class MemoryMaps {
  protected tenants = new Map<string, Tenant>()
  protected applications = new Scoped<StoredApplication>()
  /** key hash → the application or session it belongs to. */
  protected keys = new Map<
    string,
    { kind: 'application' | 'session'; tenantId: string; id: string; owner?: KeyOwner }
  >()
  protected tokens = new Scoped<StoredToken>()
  /** Every token id in order, and the ids carrying each exact term: what `findTokenIds` reads. */
  protected tokenIndex = new TokenIndex()
  /** parent → its links' places (`ChildKey.key`) in order, and place → child id: `findChildIds`. */
  protected childOrder = new Scoped<{ keys: SortedIds; ids: Map<string, string> }>()
  /** The tokens that have an `expires_at`: what `listExpired` scans for tokens. */
  protected expiringTokens = new Scoped<StoredToken>()
  /** The tokens that have a `cvc_expires_at`: what `listExpired` scans for `token.cvc`. */
  protected cvcTokens = new Scoped<StoredToken>()
  /** parent → child id → association, in the order they were made. */
  protected children = new Scoped<Map<string, Association>>()
  /** child → parent ids. */
  protected parents = new Scoped<Set<string>>()
  /**
   * Each link's sequence number (by `linkKey`), to order id-filtered child lists without a scan:
   * a field of the state, dropped when the link is.
   */
  protected linkOrder = new Map<string, number>()
  protected nextLink = 0
  /**
   * parent → how many of its children are absent or have an `expires_at` (0: every child counts
   * without a scan).
   */
  protected expiring = new Scoped<number>()
  protected transactions = new Scoped<StoredTransaction>()
  /** transaction → its staged records, by token id (in id order for `listStaged`). */
  protected staged = new Scoped<{ ids: SortedIds; records: Map<string, StagedWrite> }>()
  /** token → its lock record. */
  protected locks = new Scoped<TokenLock>()
  protected sessions = new Scoped<StoredSession>()
  /** nonce hash → session id. */
  protected nonces = new Scoped<string>()
  /** Official formulas in the `null` scope. */
  protected formulas = new Scoped<StoredFormula>()
  /** formula id → `tenant\u0000reactor` → its use record. */
  protected formulaUses = new Map<string, Map<string, FormulaUse>>()
  protected reactors = new Scoped<Reactor>()
  protected idempotency = new Scoped<IdempotencyRecord>()
  /** tenant → how many of its sessions are in state `created` (`countRecords`). */
  protected createdSessions = new Map<string, number>()
  /** Webhooks and outbox entries, with their indexes. */
  protected hooks = new WebhookMaps()
  /** Pre-configured proxies. */
  protected proxies = new ProxyMaps()
  /** Client encryption keys. */
  protected clientKeys = new ClientKeyMaps()
  /** Token intents. */
  protected intents = new TokenIntentMaps()
  /** Documents: heads and chunks. */
  protected documents = new DocumentMaps()
  /** Audit log entries, with their indexes. */
  protected logs = new LogMaps()

  protected applyOp(op: Op): void {
    if (isFeatureOp(op)) {
      this.applyFeatureOp(op)
      return
    }
    switch (op.op) {
      case 'tenant.put':
        this.tenants.set(op.tenant.id, op.tenant)
        return
      case 'tenant.delete':
        this.tenants.delete(op.id)
        return
      case 'application.put':
        this.putApplication(op.application)
        return
      case 'application.delete':
        this.deleteApplication(op)
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
        this.applyTokenOp(op)
        return
      case 'session.put':
        this.putSession(op.session)
        return
      case 'session.delete': {
        this.dropSessionIndexes(op.tenant_id, op.id)
        this.sessions.delete(op.tenant_id, op.id)
        return
      }
      case 'formula.put':
        this.formulas.set(op.formula.tenant_id, op.formula.id, op.formula)
        return
      case 'formula.delete':
        this.formulas.delete(op.tenant_id, op.id)
        return
      case 'reactor.put': {
        const r = op.reactor
        this.reactors.set(r.tenant_id, r.id, r)
        return
      }
      case 'reactor.delete': {
        this.reactors.delete(op.tenant_id, op.id)
        return
      }
      case 'formula_use.put':
        this.putFormulaUse(op.use)
        return
      case 'formula_use.delete':
        this.deleteFormulaUse(op)
        return
      case 'idempotency.put':
        this.idempotency.set(op.record.tenant_id, op.record.id, op.record)
        return
      case 'idempotency.delete':
        this.idempotency.delete(op.tenant_id, op.id)
        return
      default:
        // Client keys' ops, the last kind: an op not handled above fails to compile here.
        this.clientKeys.apply(op)
    }
  }

  /** The ops of tokens and what hangs on them: links, transactions, staged writes and locks. */
  protected applyTokenOp(op: TokenOp): void {
    switch (op.op) {
      case 'token.put':
        this.putToken(op.token)
        return
      case 'token.delete':
        this.recount(op.tenant_id, op.id, this.tokens.get(op.tenant_id, op.id), undefined)
        this.tokenIndex.update(op.tenant_id, op.id, this.tokens.get(op.tenant_id, op.id), undefined)
        this.tokens.delete(op.tenant_id, op.id)
        this.expiringTokens.delete(op.tenant_id, op.id)
        this.cvcTokens.delete(op.tenant_id, op.id)
        return
      case 'association.put':
        this.putAssociation(op.association)
        return
      case 'association.delete':
        this.unlink(op.tenant_id, op.parent_id, op.child_id)
        return
      case 'transaction.put':
        this.transactions.set(op.transaction.tenant_id, op.transaction.id, op.transaction)
        return
      case 'transaction.delete':
        this.transactions.delete(op.tenant_id, op.id)
        return
      case 'staged.put':
        this.putStaged(op.staged)
        return
      case 'staged.delete':
        this.deleteStaged(op)
        return
      case 'lock.put':
        this.locks.set(op.lock.tenant_id, op.lock.token_id, op.lock)
        return
      case 'lock.delete':
        this.locks.delete(op.tenant_id, op.token_id)
        return
    }
  }

  /** The ops of the proxy, webhook, outbox, audit-log and document records, each kept in its own maps. */
  protected applyFeatureOp(op: FeatureOp): void {
    switch (op.op) {
      case 'token_intent.put':
        this.intents.put(op.intent)
        return
      case 'token_intent.delete':
        this.intents.delete(op.tenant_id, op.id)
        return
      case 'document.put':
        this.documents.put(op.document)
        return
      case 'document_chunk.put':
        this.documents.putChunk(op.chunk)
        return
      case 'document.delete':
        this.documents.delete(op.tenant_id, op.id)
        return
      case 'proxy.put':
        this.proxies.put(op.proxy)
        return
      case 'proxy.delete':
        this.proxies.delete(op.tenant_id, op.id)
        return
      case 'webhook.put':
        this.hooks.webhooks.set(op.webhook.tenant_id, op.webhook.id, op.webhook)
        return
      case 'webhook.delete':
        this.hooks.webhooks.delete(op.tenant_id, op.id)
        return
      case 'outbox.put':
        this.hooks.putEntry(op.entry)
        return
      case 'outbox.delete':
        this.hooks.deleteEntry(op.tenant_id, op.id)
        return
      case 'log.put':
        this.logs.put(op.entry)
        return
      case 'log.delete':
        this.logs.delete(op.tenant_id, op.id)
        return
    }
  }

  /** Puts an application; its old key hashes go, its current ones point at it. */
  protected putApplication(a: StoredApplication): void {
    const old = this.applications.get(a.tenant_id, a.id)
    if (old) for (const hash of applicationKeyHashes(old)) this.keys.delete(hash)
    this.applications.set(a.tenant_id, a.id, a)
    for (const hash of applicationKeyHashes(a)) {
      this.keys.set(hash, { kind: 'application', tenantId: a.tenant_id, id: a.id })
    }
  }

  /** Deletes an application and its key hashes. */
  protected deleteApplication(op: { tenant_id: string; id: string }): void {
    const old = this.applications.get(op.tenant_id, op.id)
    if (old) for (const hash of applicationKeyHashes(old)) this.keys.delete(hash)
    this.applications.delete(op.tenant_id, op.id)
  }

  /** Puts a token with its index entries, its expiry lists and its parents' counts. */
  protected putToken(t: StoredToken): void {
    const old = this.tokens.get(t.tenant_id, t.id)
    this.tokenIndex.update(t.tenant_id, t.id, old, t)
    this.tokens.set(t.tenant_id, t.id, t)
    if (t.expires_at !== undefined) this.expiringTokens.set(t.tenant_id, t.id, t)
    else if (old?.expires_at !== undefined) this.expiringTokens.delete(t.tenant_id, t.id)
    if (t.cvc_expires_at !== undefined) this.cvcTokens.set(t.tenant_id, t.id, t)
    else if (old?.cvc_expires_at !== undefined) this.cvcTokens.delete(t.tenant_id, t.id)
    this.recount(t.tenant_id, t.id, old, t)
  }

  /** Links a child to a parent (once), in link order, counted and indexed both ways. */
  protected putAssociation(a: Association): void {
    const tenant = a.tenant_id
    let kids = this.children.get(tenant, a.parent_id)
    if (!kids) {
      kids = new Map<string, Association>()
      this.children.set(tenant, a.parent_id, kids)
    }
    if (kids.has(a.child_id)) return
    kids.set(a.child_id, a)
    const seq = this.nextLink++
    this.linkOrder.set(linkKey(tenant, a.parent_id, a.child_id), seq)
    let order = this.childOrder.get(tenant, a.parent_id)
    if (!order) {
      order = { keys: new SortedIds(), ids: new Map() }
      this.childOrder.set(tenant, a.parent_id, order)
    }
    order.keys.add(placeKey(seq))
    order.ids.set(placeKey(seq), a.child_id)
    if (needsCheck(this.tokens.get(tenant, a.child_id))) this.countExpiring(tenant, a.parent_id, 1)
    let ps = this.parents.get(tenant, a.child_id)
    if (!ps) {
      ps = new Set<string>()
      this.parents.set(tenant, a.child_id, ps)
    }
    ps.add(a.parent_id)
  }

  /** Stages a write in its transaction, in token id order. */
  protected putStaged(w: StagedWrite): void {
    let held = this.staged.get(w.tenant_id, w.transaction_id)
    if (!held) {
      held = { ids: new SortedIds(), records: new Map() }
      this.staged.set(w.tenant_id, w.transaction_id, held)
    }
    held.ids.add(w.token_id)
    held.records.set(w.token_id, w)
  }

  /** Drops a staged write (and the transaction's entry once it holds none). */
  protected deleteStaged(op: { tenant_id: string; transaction_id: string; token_id: string }): void {
    const held = this.staged.get(op.tenant_id, op.transaction_id)
    if (!held?.records.delete(op.token_id)) return
    held.ids.delete(op.token_id)
    if (!held.records.size) this.staged.delete(op.tenant_id, op.transaction_id)
  }

  /** Puts a session with its key hash and nonce indexes. */
  protected putSession(s: StoredSession): void {
    this.dropSessionIndexes(s.tenant_id, s.id)
    if (s.state === 'created') this.countCreated(s.tenant_id, 1)
    this.sessions.set(s.tenant_id, s.id, s)
    this.keys.set(s.key_hash, { kind: 'session', tenantId: s.tenant_id, id: s.id })
    this.nonces.set(s.tenant_id, s.nonce_hash, s.id)
  }

  /** Records that a reactor uses a formula (once). */
  protected putFormulaUse(u: FormulaUse): void {
    let uses = this.formulaUses.get(u.formula_id)
    if (!uses) {
      uses = new Map()
      this.formulaUses.set(u.formula_id, uses)
    }
    const key = `${u.tenant_id}\u0000${u.reactor_id}`
    if (!uses.has(key)) uses.set(key, u)
  }

  /** Forgets that a reactor uses a formula. */
  protected deleteFormulaUse(op: { formula_id: string; tenant_id: string; reactor_id: string }): void {
    const uses = this.formulaUses.get(op.formula_id)
    uses?.delete(`${op.tenant_id}\u0000${op.reactor_id}`)
    if (uses?.size === 0) this.formulaUses.delete(op.formula_id)
  }

  protected dropSessionIndexes(tenantId: string, id: string) {
    const old = this.sessions.get(tenantId, id)
    if (!old) return
    if (old.state === 'created') this.countCreated(tenantId, -1)
    this.keys.delete(old.key_hash)
    this.nonces.delete(old.tenant_id, old.nonce_hash)
  }

  protected countCreated(tenantId: string, delta: number) {
    const n = (this.createdSessions.get(tenantId) ?? 0) + delta
    if (n > 0) this.createdSessions.set(tenantId, n)
    else this.createdSessions.delete(tenantId)
  }

  protected countExpiring(tenantId: string, parentId: string, delta: number) {
    const n = (this.expiring.get(tenantId, parentId) ?? 0) + delta
    if (n <= 0) this.expiring.delete(tenantId, parentId)
    else this.expiring.set(tenantId, parentId, n)
  }

  protected unlink(tenantId: string, parentId: string, childId: string) {
    const kids = this.children.get(tenantId, parentId)
    const link = kids?.get(childId)
    if (!link || !kids?.delete(childId)) return
    const order = this.childOrder.get(tenantId, parentId)
    const key = linkKey(tenantId, parentId, childId)
    const place = placeKey(this.linkOrder.get(key) ?? -1)
    this.linkOrder.delete(key)
    order?.keys.delete(place)
    order?.ids.delete(place)
    if (order?.keys.size === 0) this.childOrder.delete(tenantId, parentId)
    if (kids.size === 0) this.children.delete(tenantId, parentId)
    if (needsCheck(this.tokens.get(tenantId, childId))) this.countExpiring(tenantId, parentId, -1)
    const ps = this.parents.get(tenantId, childId)
    ps?.delete(parentId)
    if (ps?.size === 0) this.parents.delete(tenantId, childId)
  }

  /** Keeps the parents' counts of children to check (see `expiring`) as a child goes from `old` to `next`. */
  protected recount(
    tenantId: string,
    id: string,
    old: StoredToken | undefined,
    next: StoredToken | undefined,
  ) {
    const was = needsCheck(old)
    const is = needsCheck(next)
    if (was === is) return
    for (const parentId of this.parents.get(tenantId, id) ?? [])
      this.countExpiring(tenantId, parentId, is ? 1 : -1)
  }

  /** Ids of the tenant's unexpired tokens with this fingerprint. */
  protected withFingerprint(tenantId: string, fingerprint: string, now: string): string[] {
    const ids = [
      ...this.tokenIndex.withTerm(tenantId, { kind: 'fingerprint', value: fingerprint }).from(undefined),
    ]
    return ids.filter((id) => {
      const t = this.tokens.get(tenantId, id)
      return t !== undefined && (t.expires_at === undefined || t.expires_at > now)
    })
  }
}

/** The key of the link `parentId` → `childId` of a tenant in `linkOrder` (ids may hold any character). */
export function linkKey(tenantId: string, parentId: string, childId: string): string {
  return JSON.stringify([tenantId, parentId, childId])
}
