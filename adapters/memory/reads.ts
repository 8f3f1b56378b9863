import type {
  Association,
  IdempotencyRecord,
  LogEntry,
  OutboxEntry,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredClientKey,
  StoredDocument,
  StoredDocumentChunk,
  StoredFormula,
  StoredProxy,
  StoredSession,
  StoredToken,
  StoredTokenIntent,
  StoredTransaction,
  StoredWebhook,
  Tenant,
  TokenLock,
} from '../../src/kernel/index.js'
import { assertNever } from '../../src/kernel/index.js'
import type {
  ChildKey,
  CountedKind,
  DueKey,
  ExpiringKind,
  KeyOwner,
  LogQuery,
  Page,
  Range,
  ReactorQuery,
  RecordKey,
  StoreDump,
  TokenHead,
  TokenTerm,
} from '../../src/store/index.js'
import {
  byKey,
  copiedToken,
  copy,
  frozenCopy,
  nameMatcher,
  PageFill,
  storedBytes,
} from '../../src/store/index.js'
import { headOf, k, linkKey } from './maps.js'
import { MemoryOps } from './ops.js'

/** A lock record as `StateRecords` lists it. */
export type LockTuple = readonly [
  tenantId: string,
  tokenId: string,
  transactionId: string,
  expiresAt?: string,
]

/** A memory state's reads: each answers copies. */
export class MemoryReads extends MemoryOps {
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
    return t ? copiedToken(t) : null
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

  /** Tokens of a tenant by id (see `Store.listTokens`): a page ends within `STORE_PAGE_BYTES`. */
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
      const fill = new PageFill()
      for (const id of index.fromOffset(query.offset)) {
        const token = all.get(id)!
        if (items.length >= query.limit || !fill.fits(token)) break
        items.push(copiedToken(token))
      }
      return { items, total: index.size }
    } else {
      ids = this.tokenIndex.ids(tenantId).from(undefined)
      filtered = types !== null
    }
    const items: StoredToken[] = []
    const fill = new PageFill()
    let full = false
    let total = 0
    for (const id of ids) {
      const token = all.get(id)!
      if (token.expires_at !== undefined && token.expires_at <= query.now) continue
      if (filtered && types && !types.has(token.type)) continue
      if (total >= query.offset && items.length < query.limit && !full) {
        if (fill.fits(token)) items.push(copiedToken(token))
        else full = true
      }
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
      if (token) out.push({ ...headOf(token), stored_bytes: storedBytes(token) })
    }
    return out
  }

  /** The tokens among `ids` that exist, in the order of `ids` (see `Store.getTokens`). */
  getTokens(tenantId: string, ids: readonly string[]): StoredToken[] {
    const out: StoredToken[] = []
    for (const id of new Set(ids)) {
      const token = this.tokens.get(tenantId, id)
      if (token) out.push(copiedToken(token))
    }
    return out
  }

  /** A parent's children in link order (see `Store.listChildren`): a page ends within `STORE_PAGE_BYTES`. */
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
      const fill = new PageFill()
      for (const childId of kids.keys()) {
        if (index++ < query.offset) continue
        const token = this.tokens.get(tenantId, childId)!
        if (items.length >= query.limit || !fill.fits(token)) break
        items.push(copiedToken(token))
      }
      return { items, total: kids.size }
    }
    const candidates = query.ids?.length
      ? [...new Set(query.ids)]
          .flatMap((id) => {
            const association = kids.get(id)
            return association ? [{ id, seq: this.linkOrder.get(linkKey(tenantId, parentId, id)) ?? 0 }] : []
          })
          .sort((a, b) => a.seq - b.seq)
          .map((c) => c.id)
      : kids.keys()
    const fill = new PageFill()
    let full = false
    let total = 0
    for (const childId of candidates) {
      const token = this.tokens.get(tenantId, childId)
      if (!token || (token.expires_at !== undefined && token.expires_at <= query.now)) continue
      if (types && !types.has(token.type)) continue
      if (total >= query.offset && items.length < query.limit && !full) {
        if (fill.fits(token)) items.push(copiedToken(token))
        else full = true
      }
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

  getProxy(tenantId: string, id: string): StoredProxy | null {
    return this.proxies.get(tenantId, id)
  }

  listProxies(tenantId: string, query: Range & { ids?: string[] }): Page<StoredProxy> {
    return this.proxies.list(tenantId, query)
  }

  getClientKey(tenantId: string, id: string): StoredClientKey | null {
    return this.clientKeys.get(tenantId, id)
  }

  listClientKeys(tenantId: string, query: Range): Page<StoredClientKey> {
    return this.clientKeys.list(tenantId, query)
  }

  getTokenIntent(tenantId: string, id: string): StoredTokenIntent | null {
    return this.intents.get(tenantId, id)
  }

  listDocuments(tenantId: string, query: { after?: string; limit: number }): StoredDocument[] {
    return this.documents.list(tenantId, query)
  }

  getDocument(tenantId: string, id: string): StoredDocument | null {
    return this.documents.get(tenantId, id)
  }

  getDocumentChunk(tenantId: string, documentId: string, index: number): StoredDocumentChunk | null {
    return this.documents.getChunk(tenantId, documentId, index)
  }

  getWebhook(tenantId: string, id: string): StoredWebhook | null {
    const w = this.hooks.webhooks.get(tenantId, id)
    return w ? copy(w) : null
  }

  listWebhooks(tenantId: string, range: Range): Page<StoredWebhook> {
    return this.hooks.listWebhooks(tenantId, range)
  }

  getOutbox(tenantId: string, id: string): OutboxEntry | null {
    const e = this.hooks.entries.get(tenantId, id)
    return e ? copy(e) : null
  }

  listOutbox(tenantId: string, query: { after?: string; limit: number }): OutboxEntry[] {
    return this.hooks.listOutbox(tenantId, query)
  }

  listDueOutbox(query: { before: string; limit: number; after?: DueKey }): OutboxEntry[] {
    return this.hooks.listDue(query)
  }

  listLogs(tenantId: string, query: LogQuery): LogEntry[] {
    return this.logs.list(tenantId, query)
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
      case 'webhook':
        return this.hooks.webhooks.of(tenantId).size
      case 'outbox.pending':
        return this.hooks.pendingOf(tenantId)
      case 'log':
        return this.logs.count(tenantId)
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
      case 'outbox':
        out.push(...this.hooks.expired(before, limit))
        break
      case 'token_intent':
        out.push(...this.intents.expired(before, limit))
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

  /** A lock record as `StateRecords` lists it: `expires_at` left out when it is the holder's. */
  protected lockTuple(lock: TokenLock): LockTuple {
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
  protected loadLock([tenantId, tokenId, transactionId, expiresAt]: LockTuple) {
    const expires = expiresAt ?? this.transactions.get(tenantId, transactionId)?.expires_at
    if (expires === undefined) return
    this.apply({
      op: 'lock.put',
      lock: { tenant_id: tenantId, token_id: tokenId, transaction_id: transactionId, expires_at: expires },
    })
  }

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
      ...this.hooks.dump(),
      proxies: this.proxies.dump(),
      client_keys: this.clientKeys.dump(),
      ...this.documents.dump(),
      token_intents: this.intents.dump(),
    }
  }
}
