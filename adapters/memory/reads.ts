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
import * as clientKeys from './client-keys.js'
import * as documents from './documents.js'
import * as logs from './logs.js'
import { headOf, k, linkKey, type MemoryMaps } from './maps.js'
import * as outbox from './outbox.js'
import * as proxies from './proxies.js'
import * as intents from './token-intents.js'

export function hasTenants(m: MemoryMaps): boolean {
  return m.tenants.size > 0
}

export function listTenants(m: MemoryMaps): Tenant[] {
  return [...m.tenants.values()].sort(byKey((t) => t.id)).map(copy)
}

export function getTenant(m: MemoryMaps, id: string): Tenant | null {
  const t = m.tenants.get(id)
  return t ? copy(t) : null
}

export function findKey(m: MemoryMaps, keyHash: string): KeyOwner | null {
  const entry = m.keys.get(keyHash)
  if (!entry) return null
  // Every call authenticates, so the owner is kept frozen beside its entry; a put makes a new entry.
  if (entry.owner) return entry.owner
  const application = entry.kind === 'application' ? m.applications.get(entry.tenantId, entry.id) : undefined
  const session = entry.kind === 'session' ? m.sessions.get(entry.tenantId, entry.id) : undefined
  const owner: KeyOwner | null = application
    ? { kind: 'application', application: frozenCopy(application) }
    : session
      ? { kind: 'session', session: frozenCopy(session) }
      : null
  if (owner) entry.owner = Object.freeze(owner)
  return owner
}

export function getApplication(m: MemoryMaps, tenantId: string, id: string): StoredApplication | null {
  const a = m.applications.get(tenantId, id)
  return a ? copy(a) : null
}

export function listApplications(
  m: MemoryMaps,
  tenantId: string,
  range: Range & { ids?: string[] },
): Page<StoredApplication> {
  const ids = range.ids?.length ? new Set(range.ids) : null
  const all = [...m.applications.of(tenantId).values()]
    .filter((a) => ids === null || ids.has(a.id))
    .sort(byKey((a) => `${a.created_at}\u0000${a.id}`))
  return { items: all.slice(range.offset, range.offset + range.limit).map(copy), total: all.length }
}

/** Whether the token has a `cvc_expires_at` (a put without one then deletes its cvc). */
export function hasCvcDeadline(m: MemoryMaps, tenantId: string, id: string): boolean {
  return m.cvcTokens.has(tenantId, id)
}

export function getToken(m: MemoryMaps, tenantId: string, id: string): StoredToken | null {
  const t = m.tokens.get(tenantId, id)
  return t ? copiedToken(t) : null
}

export function hasAssociation(m: MemoryMaps, tenantId: string, parentId: string, childId: string): boolean {
  return m.children.get(tenantId, parentId)?.has(childId) ?? false
}

export function listLinks(m: MemoryMaps, tenantId: string, tokenId: string): Association[] {
  const links = [...(m.children.get(tenantId, tokenId)?.values() ?? [])]
  for (const parentId of m.parents.get(tenantId, tokenId) ?? []) {
    if (parentId === tokenId) continue // already listed as its own child
    const link = m.children.get(tenantId, parentId)?.get(tokenId)
    if (link) links.push(link)
  }
  return links.map(copy)
}

/** Tokens of a tenant by id (see `Store.listTokens`): a page ends within `STORE_PAGE_BYTES`. */
export function listTokens(
  m: MemoryMaps,
  tenantId: string,
  query: Range & { ids?: string[]; types?: string[]; fingerprint?: string; now: string },
): Page<StoredToken> {
  const all = m.tokens.of(tenantId)
  const types = query.types?.length ? new Set(query.types) : null
  let ids: Iterable<string>
  let filtered = true
  if (query.ids?.length || query.fingerprint !== undefined) {
    let some = query.ids?.length ? [...new Set(query.ids)].filter((id) => all.has(id)) : null
    if (query.fingerprint !== undefined) {
      const marked = m.tokenIndex.withTerm(tenantId, { kind: 'fingerprint', value: query.fingerprint })
      some = some ? some.filter((id) => marked.has(id)) : [...marked.from(undefined)]
    }
    ids = (some ?? []).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  } else if (types?.size === 1) {
    ids = m.tokenIndex.withTerm(tenantId, { kind: 'type', value: [...types][0]! }).from(undefined)
  } else if (!types && m.expiringTokens.of(tenantId).size === 0) {
    // Every token counts: read only the requested page.
    const index = m.tokenIndex.ids(tenantId)
    const items: StoredToken[] = []
    const fill = new PageFill()
    for (const id of index.fromOffset(query.offset)) {
      const token = all.get(id)!
      if (items.length >= query.limit || !fill.fits(token)) break
      items.push(copiedToken(token))
    }
    return { items, total: index.size }
  } else {
    ids = m.tokenIndex.ids(tenantId).from(undefined)
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
export function findTokenIds(
  m: MemoryMaps,
  tenantId: string,
  query: { term?: TokenTerm; after?: string; limit: number },
): string[] {
  const { term, after, limit } = query
  if (term?.kind === 'id') {
    const found = m.tokens.has(tenantId, term.value) && (after === undefined || term.value > after)
    return found && limit > 0 ? [term.value] : []
  }
  return m.tokenIndex.withTerm(tenantId, term).after(after, limit)
}

/** Keyset read of a parent's links (see `Store.findChildIds`). */
export function findChildIds(
  m: MemoryMaps,
  tenantId: string,
  parentId: string,
  query: { after?: string; limit: number },
): ChildKey[] {
  const order = m.childOrder.get(tenantId, parentId)
  if (!order) return []
  return order.keys.after(query.after, query.limit).map((key) => ({ id: order.ids.get(key)!, key }))
}

/** Heads of the tokens among `ids` that exist, in the order of `ids` (see `Store.getTokenHeads`). */
export function getTokenHeads(m: MemoryMaps, tenantId: string, ids: readonly string[]): TokenHead[] {
  const out: TokenHead[] = []
  for (const id of new Set(ids)) {
    const token = m.tokens.get(tenantId, id)
    if (token) out.push({ ...headOf(token), stored_bytes: storedBytes(token) })
  }
  return out
}

/** The tokens among `ids` that exist, in the order of `ids` (see `Store.getTokens`). */
export function getTokens(m: MemoryMaps, tenantId: string, ids: readonly string[]): StoredToken[] {
  const out: StoredToken[] = []
  for (const id of new Set(ids)) {
    const token = m.tokens.get(tenantId, id)
    if (token) out.push(copiedToken(token))
  }
  return out
}

/** A parent's children in link order (see `Store.listChildren`): a page ends within `STORE_PAGE_BYTES`. */
export function listChildren(
  m: MemoryMaps,
  tenantId: string,
  parentId: string,
  query: Range & { ids?: string[]; types?: string[]; now: string },
): Page<StoredToken> {
  const kids = m.children.get(tenantId, parentId)
  if (!kids) return { items: [], total: 0 }
  const types = query.types?.length ? new Set(query.types) : null
  const items: StoredToken[] = []
  if (!types && !query.ids?.length && !m.expiring.has(tenantId, parentId)) {
    // Every child counts: read only the requested page.
    let index = 0
    const fill = new PageFill()
    for (const childId of kids.keys()) {
      if (index++ < query.offset) continue
      const token = m.tokens.get(tenantId, childId)!
      if (items.length >= query.limit || !fill.fits(token)) break
      items.push(copiedToken(token))
    }
    return { items, total: kids.size }
  }
  const candidates = query.ids?.length
    ? [...new Set(query.ids)]
        .flatMap((id) => {
          const association = kids.get(id)
          return association ? [{ id, seq: m.linkOrder.get(linkKey(tenantId, parentId, id)) ?? 0 }] : []
        })
        .sort((a, b) => a.seq - b.seq)
        .map((c) => c.id)
    : kids.keys()
  const fill = new PageFill()
  let full = false
  let total = 0
  for (const childId of candidates) {
    const token = m.tokens.get(tenantId, childId)
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

export function getTransaction(m: MemoryMaps, tenantId: string, id: string): StoredTransaction | null {
  const t = m.transactions.get(tenantId, id)
  return t ? copy(t) : null
}

export function listTransactions(
  m: MemoryMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): StoredTransaction[] {
  return keysetOf(m.transactions.of(tenantId), query)
}

export function getStaged(
  m: MemoryMaps,
  tenantId: string,
  transactionId: string,
  tokenIds: readonly string[],
): StagedWrite[] {
  const held = m.staged.get(tenantId, transactionId)
  if (!held) return []
  const out: StagedWrite[] = []
  for (const id of new Set(tokenIds)) {
    const w = held.records.get(id)
    if (w) out.push(copy(w))
  }
  return out
}

export function listStaged(
  m: MemoryMaps,
  tenantId: string,
  transactionId: string,
  query: { after?: string; limit: number },
): StagedWrite[] {
  const held = m.staged.get(tenantId, transactionId)
  if (!held || query.limit <= 0) return []
  return held.ids.after(query.after, query.limit).map((id) => copy(held.records.get(id)!))
}

export function getSessionByNonce(m: MemoryMaps, tenantId: string, nonceHash: string): StoredSession | null {
  const id = m.nonces.get(tenantId, nonceHash)
  const s = id === undefined ? undefined : m.sessions.get(tenantId, id)
  return s ? copy(s) : null
}

export function getFormula(m: MemoryMaps, tenantId: string | null, id: string): StoredFormula | null {
  const f = (tenantId === null ? undefined : m.formulas.get(tenantId, id)) ?? m.formulas.get(null, id)
  return f ? copy(f) : null
}

export function listFormulas(
  m: MemoryMaps,
  tenantId: string,
  query: Range & { name?: string },
): Page<StoredFormula> {
  const match = nameMatcher(query.name)
  const all = [...m.formulas.of(null).values(), ...m.formulas.of(tenantId).values()]
    .filter((f) => match(f.name))
    .sort(byKey((f) => `${f.name}\u0000${f.id}\u0000${f.tenant_id === null ? '\u0000' : '\u0001'}`))
  return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
}

export function getReactor(m: MemoryMaps, tenantId: string, id: string): Reactor | null {
  const r = m.reactors.get(tenantId, id)
  return r ? copy(r) : null
}

export function listReactors(m: MemoryMaps, tenantId: string, query: ReactorQuery): Page<Reactor> {
  const match = nameMatcher(query.name)
  const ids = query.ids?.length ? new Set(query.ids) : null
  const all = [...m.reactors.of(tenantId).values()]
    .filter((r) => match(r.name) && (!ids || ids.has(r.id)))
    .sort(byKey((r) => `${r.created_at}\u0000${r.id}`))
  return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
}

export function getProxy(m: MemoryMaps, tenantId: string, id: string): StoredProxy | null {
  return proxies.get(m.proxies, tenantId, id)
}

export function listProxies(
  m: MemoryMaps,
  tenantId: string,
  query: Range & { ids?: string[] },
): Page<StoredProxy> {
  return proxies.list(m.proxies, tenantId, query)
}

export function getClientKey(m: MemoryMaps, tenantId: string, id: string): StoredClientKey | null {
  return clientKeys.get(m.clientKeys, tenantId, id)
}

export function listClientKeys(m: MemoryMaps, tenantId: string, query: Range): Page<StoredClientKey> {
  return clientKeys.list(m.clientKeys, tenantId, query)
}

export function getTokenIntent(m: MemoryMaps, tenantId: string, id: string): StoredTokenIntent | null {
  return intents.get(m.intents, tenantId, id)
}

export function listTokenIntents(
  m: MemoryMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): StoredTokenIntent[] {
  return keysetOf(m.intents.intents.of(tenantId), query)
}

export function listDocuments(
  m: MemoryMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): StoredDocument[] {
  return documents.list(m.documents, tenantId, query)
}

export function getDocument(m: MemoryMaps, tenantId: string, id: string): StoredDocument | null {
  return documents.get(m.documents, tenantId, id)
}

export function getDocumentChunk(
  m: MemoryMaps,
  tenantId: string,
  documentId: string,
  index: number,
): StoredDocumentChunk | null {
  return documents.getChunk(m.documents, tenantId, documentId, index)
}

export function getWebhook(m: MemoryMaps, tenantId: string, id: string): StoredWebhook | null {
  const w = m.hooks.webhooks.get(tenantId, id)
  return w ? copy(w) : null
}

export function listWebhooks(m: MemoryMaps, tenantId: string, range: Range): Page<StoredWebhook> {
  return outbox.listWebhooks(m.hooks, tenantId, range)
}

export function getOutbox(m: MemoryMaps, tenantId: string, id: string): OutboxEntry | null {
  const e = outbox.entryOf(m.hooks, tenantId, id)
  return e ? copy(e) : null
}

export function listOutbox(
  m: MemoryMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): OutboxEntry[] {
  return outbox.listOutbox(m.hooks, tenantId, query)
}

export function listDueOutbox(
  m: MemoryMaps,
  query: { before: string; limit: number; after?: DueKey },
): OutboxEntry[] {
  return outbox.listDue(m.hooks, query)
}

export function listLogs(m: MemoryMaps, tenantId: string, query: LogQuery): LogEntry[] {
  return logs.list(m.logs, tenantId, query)
}

export function unindexedLog(m: MemoryMaps, tenantId: string, entries: readonly LogEntry[]): string | null {
  return logs.unindexed(m.logs, tenantId, entries)
}

export function getIdempotency(m: MemoryMaps, tenantId: string, id: string): IdempotencyRecord | null {
  const r = m.idempotency.get(tenantId, id)
  return r ? copy(r) : null
}

export function listIdempotency(
  m: MemoryMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): IdempotencyRecord[] {
  return keysetOf(m.idempotency.of(tenantId), query)
}

/** How many records of `kind` the tenant holds (see `Store.countRecords`): O(1). */
export function countRecords(m: MemoryMaps, tenantId: string, kind: CountedKind): number {
  switch (kind) {
    case 'idempotency':
      return m.idempotency.of(tenantId).size
    case 'session.created':
      return m.createdSessions.get(tenantId) ?? 0
    case 'webhook':
      return m.hooks.webhooks.of(tenantId).size
    case 'outbox.pending':
      return outbox.pendingOf(m.hooks, tenantId)
    case 'log':
      return logs.count(m.logs, tenantId)
    case 'transaction.staged':
      return m.stagedChars.get(tenantId) ?? 0
    default:
      return assertNever(kind)
  }
}

/** Keys of at most `limit` records of `kind` whose time is at or before `before` (see `Store.listExpired`). */
export function listExpired(
  m: MemoryMaps,
  query: { kind: ExpiringKind; before: string; limit: number },
): RecordKey[] {
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
      take(m.expiringTokens.values())
      break
    case 'token.cvc':
      for (const t of m.cvcTokens.values()) {
        if (t.cvc_expires_at! <= before) {
          out.push({ tenant_id: t.tenant_id, id: t.id })
          if (out.length >= limit) break
        }
      }
      break
    case 'session':
      take(m.sessions.values())
      break
    case 'idempotency':
      take(m.idempotency.values())
      break
    case 'application':
      take(m.applications.values())
      break
    case 'outbox':
      out.push(...outbox.expired(m.hooks, before, limit))
      break
    case 'token_intent':
      out.push(...intents.expired(m.intents, before, limit))
      break
    case 'transaction.open':
    case 'transaction.ended': {
      const open = query.kind === 'transaction.open'
      for (const t of m.transactions.values()) {
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

/** Every record, deep-copied and sorted by key, for tests and tools (`records()` is the cheap way to serialise). */
export function dump(m: MemoryMaps): StoreDump {
  const sorted = <T>(values: Iterable<T>, key: (t: T) => string) => [...values].sort(byKey(key)).map(copy)
  const associations: Association[] = []
  for (const kids of m.children.values()) associations.push(...kids.values())
  return {
    tenants: sorted(m.tenants.values(), (t) => t.id),
    applications: sorted(m.applications.values(), (a) => k(a.tenant_id, a.id)),
    tokens: sorted(m.tokens.values(), (t) => k(t.tenant_id, t.id)),
    associations: sorted(associations, (a) => `${k(a.tenant_id, a.parent_id)}\u0000${a.child_id}`),
    transactions: sorted(m.transactions.values(), (t) => k(t.tenant_id, t.id)),
    staged: sorted(
      [...m.staged.values()].flatMap((held) => [...held.records.values()]),
      (w) => `${k(w.tenant_id, w.transaction_id)}\u0000${w.token_id}`,
    ),
    sessions: sorted(m.sessions.values(), (s) => k(s.tenant_id, s.id)),
    formulas: sorted(m.formulas.values(), (f) => k(f.tenant_id, f.id)),
    reactors: sorted(m.reactors.values(), (r) => k(r.tenant_id, r.id)),
    idempotency: sorted(m.idempotency.values(), (r) => k(r.tenant_id, r.id)),
    ...outbox.dump(m.hooks),
    proxies: proxies.dump(m.proxies),
    client_keys: clientKeys.dump(m.clientKeys),
    ...documents.dump(m.documents),
    token_intents: intents.dump(m.intents),
  }
}

/** A keyset page of one tenant's records by id (code-unit order), strictly after `after`, copied. */
function keysetOf<T extends { id: string }>(
  records: ReadonlyMap<string, T>,
  query: { after?: string; limit: number },
): T[] {
  const { after } = query
  return [...records.values()]
    .filter((r) => after === undefined || r.id > after)
    .sort(byKey((r) => r.id))
    .slice(0, Math.max(0, query.limit))
    .map(copy)
}
