import type {
  Association,
  FormulaUse,
  IdempotencyRecord,
  Reactor,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
  Tenant,
  TokenLock,
} from '../../kernel/index.js'
import type { KeyOwner, TokenHead } from '../contract.js'
import { copy } from '../json.js'
import { Scoped } from '../scoped.js'
import type { SortedIds } from '../sorted-ids.js'
import { TokenIndex } from '../token-index.js'

/** Whether a parent's child list must look at this child: absent, or with an expiry. */
export const needsCheck = (child: StoredToken | undefined) =>
  child === undefined || child.expires_at !== undefined

/** A link's place in its parent's order (`ChildKey.key`): its sequence number, zero-padded to sort as text. */
export const placeKey = (seq: number) => String(seq).padStart(16, '0')

/** A token's head: every field but `data` and `mask`, copied. */
export function headOf(token: StoredToken): TokenHead {
  const { data: _data, mask: _mask, ...head } = token
  return copy(head)
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
  /** association → its link sequence number, to order id-filtered child lists without a scan. */
  protected linkOrder = new WeakMap<Association, number>()
  protected nextLink = 0
  /**
   * parent → how many of its children are absent or have an `expires_at` (0: every child counts
   * without a scan).
   */
  protected expiring = new Scoped<number>()
  protected transactions = new Scoped<StoredTransaction>()
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

  protected dropSessionIndexes(tenantId: string, id: string) {
    const old = this.sessions.get(tenantId, id)
    if (!old) return
    this.keys.delete(old.key_hash)
    this.nonces.delete(old.tenant_id, old.nonce_hash)
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
    const place = placeKey(this.linkOrder.get(link) ?? -1)
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
