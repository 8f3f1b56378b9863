import { assertNever } from '../errors.js'
import type {
  Association,
  Check,
  FormulaUse,
  IdempotencyRecord,
  Op,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
  Tenant,
  TokenLock,
} from '../types.js'
import type {
  ChildKey,
  CountedKind,
  ExpiringKind,
  KeyOwner,
  Page,
  Range,
  ReactorQuery,
  RecordKey,
  StoreDump,
  TokenHead,
  TokenTerm,
  WriteResult,
} from './contract.js'
import { copy, frozenCopy, sameJson } from './json.js'
import { applicationKeyHashes } from './keys.js'
import { byKey, nameMatcher } from './order.js'
import { Scoped } from './scoped.js'
import { SortedIds } from './sorted-ids.js'
import { TokenIndex } from './token-index.js'

/** Whether a parent's child list must look at this child: absent, or with an expiry. */
const needsCheck = (child: StoredToken | undefined) => child === undefined || child.expires_at !== undefined

/** A link's place in its parent's order (`ChildKey.key`): its sequence number, zero-padded to sort as text. */
const placeKey = (seq: number) => String(seq).padStart(16, '0')

/** A token's head: every field but `data` and `mask`, copied. */
function headOf(token: StoredToken): TokenHead {
  const { data: _data, mask: _mask, ...head } = token
  return copy(head)
}

/** A sort key joining a tenant and an id (official formulas have no tenant). */
const k = (tenantId: string | null, id: string) => `${tenantId ?? ''}\u0000${id}`

/**
 * Every record a `MemoryState` holds, as `records()` hands them out and `fromRecords` takes them:
 * what a serialiser needs to rebuild a state that answers every read and check as the original.
 * Beside the `StoreDump` kinds, `locks` holds the lock records, which the transactions alone do not
 * tell (a lock may have passed to another transaction, or been released by one while another that
 * lists it is still open).
 */
export interface StateRecords {
  tenants: readonly Tenant[]
  applications: readonly StoredApplication[]
  tokens: readonly StoredToken[]
  /** Each parent's links in the order they were made (the order `listChildren` answers in). */
  associations: readonly Association[]
  transactions: readonly StoredTransaction[]
  /** Staged records (what open transactions staged), transaction by transaction in token id order. */
  staged: readonly StagedWrite[]
  /**
   * `[tenant id, token id, id of the transaction holding its lock, expires_at]`, one per lock
   * record; `expires_at` is left out when it is that of the holding transaction (as the core writes
   * it, and as every lock of states saved before lock records existed was).
   */
  locks: readonly LockTuple[]
  sessions: readonly StoredSession[]
  formulas: readonly StoredFormula[]
  reactors: readonly Reactor[]
  /** Idempotency records (records written before they existed lack the list: read as empty). */
  idempotency: readonly IdempotencyRecord[]
  /**
   * Formula-use records. States saved before they existed lack the list: then every reactor that
   * names a formula uses it, as the stores of then counted.
   */
  formulaUses: readonly FormulaUse[]
}

/** A lock record as `StateRecords` lists it. */
export type LockTuple = readonly [
  tenantId: string,
  tokenId: string,
  transactionId: string,
  expiresAt?: string,
]

/** Some records of one kind, in the order `records()` lists them: what `recordSlices` yields. */
export type RecordSlice = {
  [K in keyof StateRecords]: { kind: K; records: StateRecords[K][number][] }
}[keyof StateRecords]

/**
 * The whole store as in-memory maps, applying `Store.write` batches synchronously: a batch's checks
 * and ops run without yielding, so in one process every batch is atomic and they are serialized.
 * The memory store is this state behind async methods; the file store replays its journal into it.
 */
export class MemoryState {
  private tenants = new Map<string, Tenant>()
  private applications = new Scoped<StoredApplication>()
  /** key hash → the application or session it belongs to. */
  private keys = new Map<
    string,
    { kind: 'application' | 'session'; tenantId: string; id: string; owner?: KeyOwner }
  >()
  private tokens = new Scoped<StoredToken>()
  /** Every token id in order, and the ids carrying each exact term: what `findTokenIds` reads. */
  private tokenIndex = new TokenIndex()
  /** parent → its links' places (`ChildKey.key`) in order, and place → child id: `findChildIds`. */
  private childOrder = new Scoped<{ keys: SortedIds; ids: Map<string, string> }>()
  /** The tokens that have an `expires_at`: what `listExpired` scans for tokens. */
  private expiringTokens = new Scoped<StoredToken>()
  /** The tokens that have a `cvc_expires_at`: what `listExpired` scans for `token.cvc`. */
  private cvcTokens = new Scoped<StoredToken>()
  /** parent → child id → association, in the order they were made. */
  private children = new Scoped<Map<string, Association>>()
  /** child → parent ids. */
  private parents = new Scoped<Set<string>>()
  /** association → its link sequence number, to order id-filtered child lists without a scan. */
  private linkOrder = new WeakMap<Association, number>()
  private nextLink = 0
  /**
   * parent → how many of its children are absent or have an `expires_at` (0: every child counts
   * without a scan).
   */
  private expiring = new Scoped<number>()
  private transactions = new Scoped<StoredTransaction>()
  /** transaction → its staged records, by token id (in id order for `listStaged`). */
  private staged = new Scoped<{ ids: SortedIds; records: Map<string, StagedWrite> }>()
  /** token → its lock record. */
  private locks = new Scoped<TokenLock>()
  private sessions = new Scoped<StoredSession>()
  /** nonce hash → session id. */
  private nonces = new Scoped<string>()
  /** Official formulas in the `null` scope. */
  private formulas = new Scoped<StoredFormula>()
  /** formula id → `tenant\u0000reactor` → its use record. */
  private formulaUses = new Map<string, Map<string, FormulaUse>>()
  private reactors = new Scoped<Reactor>()
  private idempotency = new Scoped<IdempotencyRecord>()
  /** tenant → how many of its sessions are in state `created` (`countRecords`). */
  private createdSessions = new Map<string, number>()

  /** The first check that fails, or null when all hold. */
  failedCheck(checks: readonly Check[]): Check | null {
    for (const c of checks) if (!this.holds(c)) return c
    return null
  }

  /** Applies a batch atomically if its checks hold. Synchronous: nothing interleaves. */
  write(batch: { checks?: readonly Check[]; ops: readonly Op[] }): WriteResult {
    const failed = this.failedCheck(batch.checks ?? [])
    if (failed) return { ok: false, failed }
    for (const op of batch.ops) this.apply(copy(op))
    return { ok: true }
  }

  private holds(c: Check): boolean {
    switch (c.check) {
      case 'token.absent':
        return !this.tokens.has(c.tenant_id, c.id)
      case 'token.present':
        return this.tokens.has(c.tenant_id, c.id)
      case 'token.unlocked': {
        const lock = this.locks.get(c.tenant_id, c.id)
        return lock === undefined || lock.transaction_id === c.except || lock.expires_at <= c.now
      }
      case 'lock.held':
        return this.locks.get(c.tenant_id, c.token_id)?.transaction_id === c.transaction_id
      case 'links.within': {
        const known = new Set(c.links.map((l) => `${l.parent_id}\u0000${l.child_id}`))
        for (const childId of this.children.get(c.tenant_id, c.token_id)?.keys() ?? [])
          if (!known.has(`${c.token_id}\u0000${childId}`)) return false
        for (const parentId of this.parents.get(c.tenant_id, c.token_id) ?? [])
          if (!known.has(`${parentId}\u0000${c.token_id}`)) return false
        return true
      }
      case 'token.unchanged': {
        const stored = this.tokens.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.token)
      }
      case 'transaction.unchanged': {
        const stored = this.transactions.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.transaction)
      }
      case 'association.absent':
      case 'association.present': {
        const exists = this.children.get(c.tenant_id, c.parent_id)?.has(c.child_id) ?? false
        return c.check === 'association.present' ? exists : !exists
      }
      case 'session.unchanged': {
        const stored = this.sessions.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.session)
      }
      case 'formula.present':
        return this.formulas.has(c.tenant_id, c.id) || this.formulas.has(null, c.id)
      case 'formula.unused':
        return !this.formulaUses.has(c.id)
      case 'reactor.unchanged': {
        const stored = this.reactors.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.reactor)
      }
      case 'application.present':
        return this.applications.has(c.tenant_id, c.id)
      case 'reactor.present':
        return this.reactors.has(c.tenant_id, c.id)
      case 'application.unchanged': {
        const stored = this.applications.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.application)
      }
      case 'idempotency.absent':
        return !this.idempotency.has(c.tenant_id, c.id)
      case 'idempotency.claimed':
        return this.idempotency.get(c.tenant_id, c.id)?.claim === c.claim
      case 'token.fingerprint_absent':
        return this.withFingerprint(c.tenant_id, c.fingerprint, c.now).length === 0
      default:
        return assertNever(c)
    }
  }

  /** Applies one op. Ops are total: applying one never fails. */
  apply(op: Op): void {
    this.applyOp(op, false)
  }

  /**
   * Applies an op as versions before links and formula uses were records of their own did, for a
   * record they wrote: a `token.delete` deletes the token's links too, an `association.put` of an
   * absent token is skipped, and a reactor's put or delete counts its formula use.
   */
  applyLegacy(op: Op): void {
    this.applyOp(op, true)
  }

  private applyOp(op: Op, legacy: boolean): void {
    switch (op.op) {
      case 'tenant.put':
        this.tenants.set(op.tenant.id, op.tenant)
        return
      case 'tenant.delete':
        this.tenants.delete(op.id)
        return
      case 'application.put': {
        const a = op.application
        const old = this.applications.get(a.tenant_id, a.id)
        if (old) for (const hash of applicationKeyHashes(old)) this.keys.delete(hash)
        this.applications.set(a.tenant_id, a.id, a)
        for (const hash of applicationKeyHashes(a)) {
          this.keys.set(hash, { kind: 'application', tenantId: a.tenant_id, id: a.id })
        }
        return
      }
      case 'application.delete': {
        const old = this.applications.get(op.tenant_id, op.id)
        if (old) for (const hash of applicationKeyHashes(old)) this.keys.delete(hash)
        this.applications.delete(op.tenant_id, op.id)
        return
      }
      case 'token.put': {
        const t = op.token
        const old = this.tokens.get(t.tenant_id, t.id)
        this.tokenIndex.update(t.tenant_id, t.id, old, t)
        this.tokens.set(t.tenant_id, t.id, t)
        if (t.expires_at !== undefined) this.expiringTokens.set(t.tenant_id, t.id, t)
        else if (old?.expires_at !== undefined) this.expiringTokens.delete(t.tenant_id, t.id)
        if (t.cvc_expires_at !== undefined) this.cvcTokens.set(t.tenant_id, t.id, t)
        else if (old?.cvc_expires_at !== undefined) this.cvcTokens.delete(t.tenant_id, t.id)
        this.recount(t.tenant_id, t.id, old, t)
        return
      }
      case 'token.delete':
        if (legacy) {
          // Earlier versions deleted a token's links with it.
          for (const childId of [...(this.children.get(op.tenant_id, op.id)?.keys() ?? [])])
            this.unlink(op.tenant_id, op.id, childId)
          for (const parentId of [...(this.parents.get(op.tenant_id, op.id) ?? [])])
            this.unlink(op.tenant_id, parentId, op.id)
        }
        this.recount(op.tenant_id, op.id, this.tokens.get(op.tenant_id, op.id), undefined)
        this.tokenIndex.update(op.tenant_id, op.id, this.tokens.get(op.tenant_id, op.id), undefined)
        this.tokens.delete(op.tenant_id, op.id)
        this.expiringTokens.delete(op.tenant_id, op.id)
        this.cvcTokens.delete(op.tenant_id, op.id)
        return
      case 'association.put': {
        const a = op.association
        const tenant = a.tenant_id
        // Earlier versions skipped a link to an absent token.
        if (legacy && (!this.tokens.has(tenant, a.parent_id) || !this.tokens.has(tenant, a.child_id))) return
        let kids = this.children.get(tenant, a.parent_id)
        if (!kids) {
          kids = new Map<string, Association>()
          this.children.set(tenant, a.parent_id, kids)
        }
        if (kids.has(a.child_id)) return
        kids.set(a.child_id, a)
        const seq = this.nextLink++
        this.linkOrder.set(a, seq)
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
        return
      }
      case 'association.delete':
        this.unlink(op.tenant_id, op.parent_id, op.child_id)
        return
      case 'transaction.put':
        this.transactions.set(op.transaction.tenant_id, op.transaction.id, op.transaction)
        return
      case 'transaction.delete':
        this.transactions.delete(op.tenant_id, op.id)
        return
      case 'staged.put': {
        const w = op.staged
        let held = this.staged.get(w.tenant_id, w.transaction_id)
        if (!held) {
          held = { ids: new SortedIds(), records: new Map() }
          this.staged.set(w.tenant_id, w.transaction_id, held)
        }
        held.ids.add(w.token_id)
        held.records.set(w.token_id, w)
        return
      }
      case 'staged.delete': {
        const held = this.staged.get(op.tenant_id, op.transaction_id)
        if (!held?.records.delete(op.token_id)) return
        held.ids.delete(op.token_id)
        if (!held.records.size) this.staged.delete(op.tenant_id, op.transaction_id)
        return
      }
      case 'lock.put':
        this.locks.set(op.lock.tenant_id, op.lock.token_id, op.lock)
        return
      case 'lock.delete':
        this.locks.delete(op.tenant_id, op.token_id)
        return
      case 'session.put': {
        const s = op.session
        this.dropSessionIndexes(s.tenant_id, s.id)
        if (s.state === 'created') this.countCreated(s.tenant_id, 1)
        this.sessions.set(s.tenant_id, s.id, s)
        this.keys.set(s.key_hash, { kind: 'session', tenantId: s.tenant_id, id: s.id })
        this.nonces.set(s.tenant_id, s.nonce_hash, s.id)
        return
      }
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
        if (legacy) {
          // Earlier versions counted a reactor's formula use with the reactor.
          const old = this.reactors.get(r.tenant_id, r.id)
          if (old) this.dropUse(old)
          this.useOf(r)
        }
        this.reactors.set(r.tenant_id, r.id, r)
        return
      }
      case 'reactor.delete': {
        const old = this.reactors.get(op.tenant_id, op.id)
        if (old && legacy) this.dropUse(old)
        this.reactors.delete(op.tenant_id, op.id)
        return
      }
      case 'formula_use.put': {
        const u = op.use
        let uses = this.formulaUses.get(u.formula_id)
        if (!uses) {
          uses = new Map()
          this.formulaUses.set(u.formula_id, uses)
        }
        const key = `${u.tenant_id}\u0000${u.reactor_id}`
        if (!uses.has(key)) uses.set(key, u)
        return
      }
      case 'formula_use.delete': {
        const uses = this.formulaUses.get(op.formula_id)
        uses?.delete(`${op.tenant_id}\u0000${op.reactor_id}`)
        if (uses?.size === 0) this.formulaUses.delete(op.formula_id)
        return
      }
      case 'idempotency.put':
        this.idempotency.set(op.record.tenant_id, op.record.id, op.record)
        return
      case 'idempotency.delete':
        this.idempotency.delete(op.tenant_id, op.id)
        return
      default:
        assertNever(op)
    }
  }

  /** Legacy records only: the formula-use record a reactor implied. */
  private useOf(r: Reactor) {
    if (r.formula_id === undefined) return
    this.apply({
      op: 'formula_use.put',
      use: { formula_id: r.formula_id, tenant_id: r.tenant_id, reactor_id: r.id },
    })
  }

  /** Legacy records only: drops the formula-use record a reactor implied. */
  private dropUse(r: Reactor) {
    if (r.formula_id === undefined) return
    this.apply({
      op: 'formula_use.delete',
      formula_id: r.formula_id,
      tenant_id: r.tenant_id,
      reactor_id: r.id,
    })
  }

  /**
   * For a state saved before formula-use records existed (see `StateRecords.formulaUses`): the use
   * record of every reactor that names a formula.
   */
  private deriveUses() {
    for (const r of this.reactors.values()) this.useOf(r)
  }

  private dropSessionIndexes(tenantId: string, id: string) {
    const old = this.sessions.get(tenantId, id)
    if (!old) return
    if (old.state === 'created') this.countCreated(tenantId, -1)
    this.keys.delete(old.key_hash)
    this.nonces.delete(old.tenant_id, old.nonce_hash)
  }

  private countCreated(tenantId: string, delta: number) {
    const n = (this.createdSessions.get(tenantId) ?? 0) + delta
    if (n > 0) this.createdSessions.set(tenantId, n)
    else this.createdSessions.delete(tenantId)
  }

  private countExpiring(tenantId: string, parentId: string, delta: number) {
    const n = (this.expiring.get(tenantId, parentId) ?? 0) + delta
    if (n <= 0) this.expiring.delete(tenantId, parentId)
    else this.expiring.set(tenantId, parentId, n)
  }

  private unlink(tenantId: string, parentId: string, childId: string) {
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
  private recount(tenantId: string, id: string, old: StoredToken | undefined, next: StoredToken | undefined) {
    const was = needsCheck(old)
    const is = needsCheck(next)
    if (was === is) return
    for (const parentId of this.parents.get(tenantId, id) ?? [])
      this.countExpiring(tenantId, parentId, is ? 1 : -1)
  }

  /** Ids of the tenant's unexpired tokens with this fingerprint. */
  private withFingerprint(tenantId: string, fingerprint: string, now: string): string[] {
    const ids = [
      ...this.tokenIndex.withTerm(tenantId, { kind: 'fingerprint', value: fingerprint }).from(undefined),
    ]
    return ids.filter((id) => {
      const t = this.tokens.get(tenantId, id)
      return t !== undefined && (t.expires_at === undefined || t.expires_at > now)
    })
  }

  // Reads: each returns copies.

  hasTenants(): boolean {
    return this.tenants.size > 0
  }

  listTenants(): Tenant[] {
    return [...this.tenants.values()].sort(byKey((t) => t.id)).map(copy)
  }

  getTenant(id: string): Tenant | null {
    const t = this.tenants.get(id)
    return t ? copy(t) : null
  }

  findKey(keyHash: string): KeyOwner | null {
    const entry = this.keys.get(keyHash)
    if (!entry) return null
    // Every call authenticates, so the owner is kept frozen beside its entry; a put makes a new entry.
    if (entry.owner) return entry.owner
    const application =
      entry.kind === 'application' ? this.applications.get(entry.tenantId, entry.id) : undefined
    const session = entry.kind === 'session' ? this.sessions.get(entry.tenantId, entry.id) : undefined
    const owner: KeyOwner | null = application
      ? { kind: 'application', application: frozenCopy(application) }
      : session
        ? { kind: 'session', session: frozenCopy(session) }
        : null
    if (owner) entry.owner = Object.freeze(owner)
    return owner
  }

  getApplication(tenantId: string, id: string): StoredApplication | null {
    const a = this.applications.get(tenantId, id)
    return a ? copy(a) : null
  }

  listApplications(tenantId: string, range: Range & { ids?: string[] }): Page<StoredApplication> {
    const ids = range.ids?.length ? new Set(range.ids) : null
    const all = [...this.applications.of(tenantId).values()]
      .filter((a) => ids === null || ids.has(a.id))
      .sort(byKey((a) => `${a.created_at}\u0000${a.id}`))
    return { items: all.slice(range.offset, range.offset + range.limit).map(copy), total: all.length }
  }

  /** Whether the token has a `cvc_expires_at` (a put without one then deletes its cvc). */
  hasCvcDeadline(tenantId: string, id: string): boolean {
    return this.cvcTokens.has(tenantId, id)
  }

  getToken(tenantId: string, id: string): StoredToken | null {
    const t = this.tokens.get(tenantId, id)
    return t ? copy(t) : null
  }

  hasAssociation(tenantId: string, parentId: string, childId: string): boolean {
    return this.children.get(tenantId, parentId)?.has(childId) ?? false
  }

  listLinks(tenantId: string, tokenId: string): Association[] {
    const links = [...(this.children.get(tenantId, tokenId)?.values() ?? [])]
    for (const parentId of this.parents.get(tenantId, tokenId) ?? []) {
      if (parentId === tokenId) continue // already listed as its own child
      const link = this.children.get(tenantId, parentId)?.get(tokenId)
      if (link) links.push(link)
    }
    return links.map(copy)
  }

  listTokens(
    tenantId: string,
    query: Range & { ids?: string[]; types?: string[]; fingerprint?: string; now: string },
  ): Page<StoredToken> {
    const all = this.tokens.of(tenantId)
    const types = query.types?.length ? new Set(query.types) : null
    let ids: Iterable<string>
    let filtered = true
    if (query.ids?.length || query.fingerprint !== undefined) {
      let some = query.ids?.length ? [...new Set(query.ids)].filter((id) => all.has(id)) : null
      if (query.fingerprint !== undefined) {
        const marked = this.tokenIndex.withTerm(tenantId, { kind: 'fingerprint', value: query.fingerprint })
        some = some ? some.filter((id) => marked.has(id)) : [...marked.from(undefined)]
      }
      ids = (some ?? []).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    } else if (types?.size === 1) {
      ids = this.tokenIndex.withTerm(tenantId, { kind: 'type', value: [...types][0]! }).from(undefined)
    } else if (!types && this.expiringTokens.of(tenantId).size === 0) {
      // Every token counts: read only the requested page.
      const index = this.tokenIndex.ids(tenantId)
      const items: StoredToken[] = []
      for (const id of index.fromOffset(query.offset)) {
        if (items.length >= query.limit) break
        items.push(copy(all.get(id)!))
      }
      return { items, total: index.size }
    } else {
      ids = this.tokenIndex.ids(tenantId).from(undefined)
      filtered = types !== null
    }
    const items: StoredToken[] = []
    let total = 0
    for (const id of ids) {
      const token = all.get(id)!
      if (token.expires_at !== undefined && token.expires_at <= query.now) continue
      if (filtered && types && !types.has(token.type)) continue
      if (total >= query.offset && items.length < query.limit) items.push(copy(token))
      total++
    }
    return { items, total }
  }

  /** Keyset read of a token index (see `Store.findTokenIds`). */
  findTokenIds(tenantId: string, query: { term?: TokenTerm; after?: string; limit: number }): string[] {
    const { term, after, limit } = query
    if (term?.kind === 'id') {
      const found = this.tokens.has(tenantId, term.value) && (after === undefined || term.value > after)
      return found && limit > 0 ? [term.value] : []
    }
    return this.tokenIndex.withTerm(tenantId, term).after(after, limit)
  }

  /** Keyset read of a parent's links (see `Store.findChildIds`). */
  findChildIds(tenantId: string, parentId: string, query: { after?: string; limit: number }): ChildKey[] {
    const order = this.childOrder.get(tenantId, parentId)
    if (!order) return []
    return order.keys.after(query.after, query.limit).map((key) => ({ id: order.ids.get(key)!, key }))
  }

  /** Heads of the tokens among `ids` that exist, in the order of `ids` (see `Store.getTokenHeads`). */
  getTokenHeads(tenantId: string, ids: readonly string[]): TokenHead[] {
    const out: TokenHead[] = []
    for (const id of new Set(ids)) {
      const token = this.tokens.get(tenantId, id)
      if (token) out.push(headOf(token))
    }
    return out
  }

  /** The tokens among `ids` that exist, in the order of `ids` (see `Store.getTokens`). */
  getTokens(tenantId: string, ids: readonly string[]): StoredToken[] {
    const out: StoredToken[] = []
    for (const id of new Set(ids)) {
      const token = this.tokens.get(tenantId, id)
      if (token) out.push(copy(token))
    }
    return out
  }

  listChildren(
    tenantId: string,
    parentId: string,
    query: Range & { ids?: string[]; types?: string[]; now: string },
  ): Page<StoredToken> {
    const kids = this.children.get(tenantId, parentId)
    if (!kids) return { items: [], total: 0 }
    const types = query.types?.length ? new Set(query.types) : null
    const items: StoredToken[] = []
    if (!types && !query.ids?.length && !this.expiring.has(tenantId, parentId)) {
      // Every child counts: read only the requested page.
      let index = 0
      for (const childId of kids.keys()) {
        if (index++ < query.offset) continue
        if (items.length >= query.limit) break
        items.push(copy(this.tokens.get(tenantId, childId)!))
      }
      return { items, total: kids.size }
    }
    const candidates = query.ids?.length
      ? [...new Set(query.ids)]
          .flatMap((id) => {
            const association = kids.get(id)
            return association ? [{ id, seq: this.linkOrder.get(association) ?? 0 }] : []
          })
          .sort((a, b) => a.seq - b.seq)
          .map((c) => c.id)
      : kids.keys()
    let total = 0
    for (const childId of candidates) {
      const token = this.tokens.get(tenantId, childId)
      if (!token || (token.expires_at !== undefined && token.expires_at <= query.now)) continue
      if (types && !types.has(token.type)) continue
      if (total >= query.offset && items.length < query.limit) items.push(copy(token))
      total++
    }
    return { items, total }
  }

  getTransaction(tenantId: string, id: string): StoredTransaction | null {
    const t = this.transactions.get(tenantId, id)
    return t ? copy(t) : null
  }

  getStaged(tenantId: string, transactionId: string, tokenIds: readonly string[]): StagedWrite[] {
    const held = this.staged.get(tenantId, transactionId)
    if (!held) return []
    const out: StagedWrite[] = []
    for (const id of new Set(tokenIds)) {
      const w = held.records.get(id)
      if (w) out.push(copy(w))
    }
    return out
  }

  listStaged(
    tenantId: string,
    transactionId: string,
    query: { after?: string; limit: number },
  ): StagedWrite[] {
    const held = this.staged.get(tenantId, transactionId)
    if (!held || query.limit <= 0) return []
    return held.ids.after(query.after, query.limit).map((id) => copy(held.records.get(id)!))
  }

  getSessionByNonce(tenantId: string, nonceHash: string): StoredSession | null {
    const id = this.nonces.get(tenantId, nonceHash)
    const s = id === undefined ? undefined : this.sessions.get(tenantId, id)
    return s ? copy(s) : null
  }

  getFormula(tenantId: string | null, id: string): StoredFormula | null {
    const f = (tenantId === null ? undefined : this.formulas.get(tenantId, id)) ?? this.formulas.get(null, id)
    return f ? copy(f) : null
  }

  listFormulas(tenantId: string, query: Range & { name?: string }): Page<StoredFormula> {
    const match = nameMatcher(query.name)
    const all = [...this.formulas.of(null).values(), ...this.formulas.of(tenantId).values()]
      .filter((f) => match(f.name))
      .sort(byKey((f) => `${f.name}\u0000${f.id}\u0000${f.tenant_id === null ? '\u0000' : '\u0001'}`))
    return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
  }

  getReactor(tenantId: string, id: string): Reactor | null {
    const r = this.reactors.get(tenantId, id)
    return r ? copy(r) : null
  }

  listReactors(tenantId: string, query: ReactorQuery): Page<Reactor> {
    const match = nameMatcher(query.name)
    const ids = query.ids?.length ? new Set(query.ids) : null
    const all = [...this.reactors.of(tenantId).values()]
      .filter((r) => match(r.name) && (!ids || ids.has(r.id)))
      .sort(byKey((r) => `${r.created_at}\u0000${r.id}`))
    return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
  }

  getIdempotency(tenantId: string, id: string): IdempotencyRecord | null {
    const r = this.idempotency.get(tenantId, id)
    return r ? copy(r) : null
  }

  /** How many records of `kind` the tenant holds (see `Store.countRecords`): O(1). */
  countRecords(tenantId: string, kind: CountedKind): number {
    switch (kind) {
      case 'idempotency':
        return this.idempotency.of(tenantId).size
      case 'session.created':
        return this.createdSessions.get(tenantId) ?? 0
      default:
        return assertNever(kind)
    }
  }

  /** Keys of at most `limit` records of `kind` whose time is at or before `before` (see `Store.listExpired`). */
  listExpired(query: { kind: ExpiringKind; before: string; limit: number }): RecordKey[] {
    const { before, limit } = query
    const out: RecordKey[] = []
    if (limit <= 0) return out
    const take = (values: Iterable<{ tenant_id: string; id: string; expires_at?: string }>) => {
      for (const r of values) {
        if (r.expires_at !== undefined && r.expires_at <= before) {
          out.push({ tenant_id: r.tenant_id, id: r.id })
          if (out.length >= limit) break
        }
      }
    }
    switch (query.kind) {
      case 'token':
        take(this.expiringTokens.values())
        break
      case 'token.cvc':
        for (const t of this.cvcTokens.values()) {
          if (t.cvc_expires_at! <= before) {
            out.push({ tenant_id: t.tenant_id, id: t.id })
            if (out.length >= limit) break
          }
        }
        break
      case 'session':
        take(this.sessions.values())
        break
      case 'idempotency':
        take(this.idempotency.values())
        break
      case 'application':
        take(this.applications.values())
        break
      case 'transaction.open':
      case 'transaction.ended': {
        const open = query.kind === 'transaction.open'
        for (const t of this.transactions.values()) {
          if (t.expires_at <= before && (t.state === 'open') === open) {
            out.push({ tenant_id: t.tenant_id, id: t.id })
            if (out.length >= limit) break
          }
        }
        break
      }
      default:
        assertNever(query.kind)
    }
    return out
  }

  /**
   * Every record as stored, neither copied nor sorted: for a serialiser that reads them at once
   * (say, one `JSON.stringify`), before anything else runs. The arrays are fresh, but the records
   * in them are the state's own: never mutate them, and never keep them.
   *
   * Associations come parent by parent, each parent's in the order its links were made (a link
   * made again after an unlink comes last); that per-parent order is what `listChildren` answers
   * in, and the only order among links that any read shows.
   */
  records(): StateRecords {
    const associations: Association[] = []
    for (const kids of this.children.values()) for (const a of kids.values()) associations.push(a)
    const locks: LockTuple[] = []
    for (const lock of this.locks.values()) locks.push(this.lockTuple(lock))
    return {
      tenants: [...this.tenants.values()],
      applications: [...this.applications.values()],
      tokens: [...this.tokens.values()],
      associations,
      transactions: [...this.transactions.values()],
      staged: [...this.staged.values()].flatMap((held) =>
        held.ids.after(undefined, held.ids.size).map((id) => held.records.get(id)!),
      ),
      locks,
      sessions: [...this.sessions.values()],
      formulas: [...this.formulas.values()],
      reactors: [...this.reactors.values()],
      idempotency: [...this.idempotency.values()],
      formulaUses: [...this.formulaUses.values()].flatMap((uses) => [...uses.values()]),
    }
  }

  /**
   * The records of `records()`, in the same order, kind by kind in slices of at most `size`: for a
   * serialiser that copies a slice at a time and lets other work run in between, so that no single
   * step reads the whole state. The maps are read live: no op may apply until the iteration ends
   * (what it yields is then what `records()` would have answered at any moment in between). The
   * records are the state's own, as in `records()`.
   */
  *recordSlices(size: number): Generator<RecordSlice, void, undefined> {
    const n = Math.max(1, Math.floor(size))
    // One plain loop per map, no generator step per record: millions of those cost more than the copy.
    let records: unknown[] = []
    const cut = (kind: RecordSlice['kind']): RecordSlice => {
      const slice = { kind, records } as RecordSlice
      records = []
      return slice
    }
    for (const t of this.tenants.values()) {
      records.push(t)
      if (records.length >= n) yield cut('tenants')
    }
    if (records.length) yield cut('tenants')
    const scoped = [
      ['applications', this.applications],
      ['tokens', this.tokens],
      ['associations', null],
      ['transactions', this.transactions],
      ['staged', null],
      ['locks', null],
      ['sessions', this.sessions],
      ['formulas', this.formulas],
      ['reactors', this.reactors],
      ['idempotency', this.idempotency],
      ['formulaUses', null],
    ] as const
    /** Fails to compile when `StateRecords` gains a kind that this list (or `tenants`) lacks. */
    const everyKind: Exclude<keyof StateRecords, 'tenants' | (typeof scoped)[number][0]> extends never
      ? true
      : never = true
    void everyKind
    for (const [kind, source] of scoped) {
      if (kind === 'associations') {
        for (const [, parents] of this.children.scopes())
          for (const kids of parents.values())
            for (const a of kids.values()) {
              records.push(a)
              if (records.length >= n) yield cut(kind)
            }
      } else if (kind === 'formulaUses') {
        for (const uses of this.formulaUses.values())
          for (const use of uses.values()) {
            records.push(use)
            if (records.length >= n) yield cut(kind)
          }
        // A state with reactors has the slice even when empty: a loader tells it from a state saved
        // before use records existed by it (and a state without reactors has nothing to derive).
        if (!records.length && !this.reactors.values().next().done) yield cut(kind)
      } else if (kind === 'staged') {
        for (const held of this.staged.values())
          for (const id of held.ids.after(undefined, held.ids.size)) {
            records.push(held.records.get(id)!)
            if (records.length >= n) yield cut(kind)
          }
      } else if (kind === 'locks') {
        for (const [, held] of this.locks.scopes())
          for (const lock of held.values()) {
            records.push(this.lockTuple(lock))
            if (records.length >= n) yield cut(kind)
          }
      } else {
        for (const [, scope] of (source as Scoped<unknown>).scopes())
          for (const record of scope.values()) {
            records.push(record)
            if (records.length >= n) yield cut(kind)
          }
      }
      if (records.length) yield cut(kind)
    }
  }

  /** A lock record as `StateRecords` lists it: `expires_at` left out when it is the holder's. */
  private lockTuple(lock: TokenLock): LockTuple {
    const holder = this.transactions.get(lock.tenant_id, lock.transaction_id)
    return holder?.expires_at === lock.expires_at
      ? [lock.tenant_id, lock.token_id, lock.transaction_id]
      : [lock.tenant_id, lock.token_id, lock.transaction_id, lock.expires_at]
  }

  /**
   * Puts the lock record a `StateRecords` tuple lists (after the transactions: one without
   * `expires_at` takes its holder's; without a holder to take it from, it locks nothing and is
   * dropped).
   */
  private loadLock([tenantId, tokenId, transactionId, expiresAt]: LockTuple) {
    const expires = expiresAt ?? this.transactions.get(tenantId, transactionId)?.expires_at
    if (expires === undefined) return
    this.apply({
      op: 'lock.put',
      lock: { tenant_id: tenantId, token_id: tokenId, transaction_id: transactionId, expires_at: expires },
    })
  }

  /**
   * Rebuilds the state that `records()` described: every read and check answers as it did on the
   * original, and ops go on to apply alike. Tokens are put before the associations between them,
   * and the lock records are put exactly as listed (whatever the open transactions list).
   *
   * The new state takes the records as its own and may mutate them later (see `records()`): pass
   * records nothing else holds, such as freshly parsed ones. Key and nonce hashes are taken to be
   * unique, as the SHA-256 hashes of random secrets that they are.
   */
  static fromRecords(r: StateRecords): MemoryState {
    const state = new MemoryState()
    for (const tenant of r.tenants) state.apply({ op: 'tenant.put', tenant })
    for (const application of r.applications) state.apply({ op: 'application.put', application })
    for (const token of r.tokens) state.apply({ op: 'token.put', token })
    for (const association of r.associations) state.apply({ op: 'association.put', association })
    for (const transaction of r.transactions) state.apply({ op: 'transaction.put', transaction })
    for (const staged of r.staged) state.apply({ op: 'staged.put', staged })
    for (const lock of r.locks) state.loadLock(lock)
    for (const session of r.sessions) state.apply({ op: 'session.put', session })
    for (const formula of r.formulas) state.apply({ op: 'formula.put', formula })
    for (const reactor of r.reactors) state.apply({ op: 'reactor.put', reactor })
    for (const record of r.idempotency ?? []) state.apply({ op: 'idempotency.put', record })
    // Records saved before formula-use records existed lack the list.
    if (r.formulaUses !== undefined)
      for (const use of r.formulaUses) state.apply({ op: 'formula_use.put', use })
    else state.deriveUses()
    return state
  }

  /**
   * Loads one slice of records into a new state, as `fromRecords` would load them: for a loader
   * that reads a serialised state a slice at a time (never all of it at once). Slices must come in
   * the kind order of `records()` (as `recordSlices` yields them). The state takes the records as
   * its own.
   */
  loadSlice(slice: RecordSlice): void {
    switch (slice.kind) {
      case 'tenants':
        for (const tenant of slice.records) this.apply({ op: 'tenant.put', tenant })
        return
      case 'applications':
        for (const application of slice.records) this.apply({ op: 'application.put', application })
        return
      case 'tokens':
        for (const token of slice.records) this.apply({ op: 'token.put', token })
        return
      case 'associations':
        for (const association of slice.records) this.apply({ op: 'association.put', association })
        return
      case 'transactions':
        for (const transaction of slice.records) this.apply({ op: 'transaction.put', transaction })
        return
      case 'staged':
        for (const staged of slice.records) this.apply({ op: 'staged.put', staged })
        return
      case 'locks':
        for (const lock of slice.records) this.loadLock(lock)
        return
      case 'sessions':
        for (const session of slice.records) this.apply({ op: 'session.put', session })
        return
      case 'formulas':
        for (const formula of slice.records) this.apply({ op: 'formula.put', formula })
        return
      case 'reactors':
        for (const reactor of slice.records) this.apply({ op: 'reactor.put', reactor })
        return
      case 'idempotency':
        for (const record of slice.records) this.apply({ op: 'idempotency.put', record })
        return
      case 'formulaUses':
        this.usesLoaded = true
        for (const use of slice.records) this.apply({ op: 'formula_use.put', use })
        return
      default:
        assertNever(slice)
    }
  }

  /**
   * Ends a load by `loadSlice`: a state saved before formula-use records existed (it had no
   * `formulaUses` slice) gets the use records of its reactors.
   */
  finishLoad(): void {
    if (!this.usesLoaded) this.deriveUses()
    this.usesLoaded = true
  }
  /** Whether a load by `loadSlice` met the formula-use records. */
  private usesLoaded = false

  /** Every record, deep-copied and sorted by key, for tests and tools (`records()` is the cheap way to serialise). */
  dump(): StoreDump {
    const sorted = <T>(values: Iterable<T>, key: (t: T) => string) => [...values].sort(byKey(key)).map(copy)
    const associations: Association[] = []
    for (const kids of this.children.values()) associations.push(...kids.values())
    return {
      tenants: sorted(this.tenants.values(), (t) => t.id),
      applications: sorted(this.applications.values(), (a) => k(a.tenant_id, a.id)),
      tokens: sorted(this.tokens.values(), (t) => k(t.tenant_id, t.id)),
      associations: sorted(associations, (a) => `${k(a.tenant_id, a.parent_id)}\u0000${a.child_id}`),
      transactions: sorted(this.transactions.values(), (t) => k(t.tenant_id, t.id)),
      staged: sorted(
        [...this.staged.values()].flatMap((held) => [...held.records.values()]),
        (w) => `${k(w.tenant_id, w.transaction_id)}\u0000${w.token_id}`,
      ),
      sessions: sorted(this.sessions.values(), (s) => k(s.tenant_id, s.id)),
      formulas: sorted(this.formulas.values(), (f) => k(f.tenant_id, f.id)),
      reactors: sorted(this.reactors.values(), (r) => k(r.tenant_id, r.id)),
      idempotency: sorted(this.idempotency.values(), (r) => k(r.tenant_id, r.id)),
    }
  }
}
