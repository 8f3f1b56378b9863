import type { Database } from 'lmdb'
import type {
  Association,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
} from '../../src/kernel/index.js'
import { assertNever, TenantLru, tokenHead } from '../../src/kernel/index.js'
import type {
  ChildKey,
  ExpiringKind,
  KeyOwner,
  Page,
  RecordKey,
  StoreDump,
  StoreReads,
  TokenHead,
} from '../../src/store/index.js'
import { byKey, frozenCopy, nameMatcher, PageFill, storedBytes, termKey } from '../../src/store/index.js'
import { countKey, type Expiring, type StoredLink } from './apply.js'
import { allClientKeys, clientKeyReads } from './client-keys.js'
import { allDocuments, documentReads } from './documents.js'
import type { Databases } from './env.js'
import { key, prefix, read, termPart, tokenCountKey } from './keys.js'
import { logReads } from './logs.js'
import { webhookReads } from './outbox.js'
import { allProxies, proxyReads } from './proxies.js'
import { portableToken } from './token-codec.js'
import { allTokenIntents, tokenIntentReads } from './token-intents.js'

/** Every value under `parts`, in key order. */
function* under<T>(db: Database, ...parts: string[]): Generator<T> {
  for (const { value } of db.getRange(prefix(...parts))) yield value as T
}

/** The last key part of every key under `parts`, in key order. */
function* idsUnder(db: Database, ...parts: string[]): Generator<string> {
  const range = prefix(...parts)
  for (const k of db.getKeys(range)) yield (k as Buffer).subarray(range.start.length).toString('utf8')
}

/**
 * At most `limit` last key parts under `parts`, strictly after `after` when given: a keyset page of
 * an ordered database (the next key after `after` is `after` followed by a 0x00 byte).
 */
function keysetUnder(db: Database, parts: string[], after: string | undefined, limit: number): string[] {
  if (limit <= 0) return []
  const range = prefix(...parts)
  const start = after === undefined ? range.start : Buffer.concat([key(...parts, after), Buffer.from([0])])
  const out: string[] = []
  for (const k of db.getKeys({ start, end: range.end, limit }))
    out.push((k as Buffer).subarray(range.start.length).toString('utf8'))
  return out
}

/** At most `limit` values under `parts`, keyed strictly after `after` when given (as `keysetUnder`). */
function valuesAfter<T>(db: Database, parts: string[], after: string | undefined, limit: number): T[] {
  if (limit <= 0) return []
  const range = prefix(...parts)
  const start = after === undefined ? range.start : Buffer.concat([key(...parts, after), Buffer.from([0])])
  const out: T[] = []
  for (const { value } of db.getRange({ start, end: range.end, limit })) out.push(value as T)
  return out
}

/** A token without `data` and `mask`: what the core matches before it decrypts anything. */
function headOf(token: StoredToken): TokenHead {
  return tokenHead(token)
}

/** A page of `all` (already filtered and ordered). */
const slice = <T>(all: T[], offset: number, limit: number): Page<T> => ({
  items: all.slice(offset, offset + limit),
  total: all.length,
})

const live = (t: StoredToken | undefined, now: string): t is StoredToken =>
  t !== undefined && (t.expires_at === undefined || t.expires_at > now)

/** Every value of a database, for `dump`. */
const all = <T>(db: Database): T[] => [...db.getRange({})].map((e) => e.value as T)

/**
 * How many decoded key owners `findKey` keeps of one tenant, and in all: a tenant authenticating
 * with many keys (sessions are keys) evicts only its own least recently used (see `TenantLru`).
 */
const OWNERS_PER_TENANT = 1000
const OWNER_CACHE = 10_000

const k = (tenantId: string | null, id: string) => `${tenantId ?? ''}\u0000${id}`

/**
 * Counts the moves of this process's read snapshot: bumped whenever what reads see may have changed
 * (a move to another process's newer commit, a commit of this process's own, the store opened
 * again). What was read and checked while it holds one value is still what a read would find.
 */
export interface Snapshot {
  moves: number
}

/**
 * The read side of the store contract on the LMDB databases `use()` returns. Each call first moves
 * to the newest committed snapshot if any process committed since the last move, then reads ranges
 * of ordered keys: a token by key, children by the parent's link order, tokens of a tenant by id.
 */
export function lmdbReads(use: () => Databases, snapshot: Snapshot): StoreReads {
  /**
   * Owners by key hash, with the record bytes they were decoded from (a stale entry never matches)
   * and the snapshot (`Snapshot.moves`) in which they were last read and found current: within that
   * snapshot, the same key finds the same owner without reading the key index and the record again.
   */
  const owners = new TenantLru<{ bytes: Buffer; owner: KeyOwner; at: number }>(OWNERS_PER_TENANT, OWNER_CACHE)
  /**
   * The tenant of each key hash seen, to look `owners` up without reading the key index first: a
   * hint only (an entry counts only if `owners` still holds it, read in the current snapshot).
   * Emptied when it reaches OWNER_CACHE entries.
   */
  let tenantOfKey = new Map<string, string>()
  /** The newest committed transaction id when this process last moved to a new snapshot. */
  let seen: bigint | null = null
  /**
   * Whether the snapshot was checked in the current run of callbacks: reads continued from one
   * event (a request's, a timer's: its code and the promise jobs it queued) share one check, since
   * every write acknowledged before that event arrived is already in the snapshot checked after
   * it. Cleared on the next tick, before the next event's callbacks run.
   */
  let checked = false
  const uncheck = () => {
    checked = false
  }
  const fresh = () => {
    const dbs = use()
    if (checked) return dbs
    checked = true
    process.nextTick(uncheck)
    // Another process committed since: move to the newest snapshot (this process's own commits
    // move it already). Reading the shared lock file costs a read of 8 bytes, not a new snapshot.
    const head = dbs.head()
    if (head === null || head !== seen) {
      dbs.env.resetReadTxn()
      snapshot.moves++
      seen = head
    }
    return dbs
  }
  return {
    getTenant: async (id) => read(fresh().tenants, id) ?? null,
    hasTenants: async () => fresh().tenants.getKeysCount({ limit: 1 }) > 0,
    listTenants: async () => all(fresh().tenants),
    findKey: async (hash) => {
      const dbs = fresh()
      const tenant = tenantOfKey.get(hash)
      const known = tenant === undefined ? undefined : owners.get(tenant, hash)
      if (known?.at === snapshot.moves) return known.owner
      const entry = read<{ kind: 'application' | 'session'; tenant_id: string; id: string }>(dbs.keys, hash)
      if (!entry) return null
      const db = entry.kind === 'application' ? dbs.applications : dbs.sessions
      const bytes = db.getBinary(key(entry.tenant_id, entry.id))
      if (!bytes) return null
      // Every call authenticates: the owner decoded from the same bytes is handed out again, frozen.
      const cached = owners.get(entry.tenant_id, hash)
      if (tenantOfKey.get(hash) !== entry.tenant_id) {
        if (tenantOfKey.size >= OWNER_CACHE) tenantOfKey = new Map()
        tenantOfKey.set(hash, entry.tenant_id)
      }
      if (cached?.bytes.equals(bytes)) {
        cached.at = snapshot.moves
        return cached.owner
      }
      const record = JSON.parse(bytes.toString('utf8')) as StoredApplication & StoredSession
      const owner = frozenCopy(
        entry.kind === 'application'
          ? { kind: 'application', application: record }
          : { kind: 'session', session: record },
      ) as KeyOwner
      owners.set(entry.tenant_id, hash, { bytes: Buffer.from(bytes), owner, at: snapshot.moves })
      return owner
    },
    getApplication: async (t, id) => read(fresh().applications, t, id) ?? null,
    listApplications: async (t, query) => {
      const ids = query.ids?.length ? new Set(query.ids) : null
      const found = [...under<StoredApplication>(fresh().applications, t)]
        .filter((a) => ids === null || ids.has(a.id))
        .sort(byKey((a) => `${a.created_at}\u0000${a.id}`))
      return slice(found, query.offset, query.limit)
    },
    ...tokenReads(fresh),
    ...tokenIdReads(fresh),
    ...recordReads(fresh),
    ...webhookReads(fresh),
    ...clientKeyReads(fresh),
    ...proxyReads(fresh),
    ...documentReads(fresh),
    ...tokenIntentReads(fresh),
    ...logReads(fresh),
    countRecords: async (t, kind) => (fresh().meta.get(countKey(kind, t)) as number | undefined) ?? 0,
    ...expiredReads(fresh),
    dump: async () => lmdbDump(fresh()),
  }
}

/** Tokens by id, their links, children and pages. */
function tokenReads(
  fresh: () => Databases,
): Pick<StoreReads, 'getToken' | 'hasAssociation' | 'listLinks' | 'listChildren' | 'listTokens'> {
  return {
    getToken: async (t, id) => read(fresh().tokens, t, id) ?? null,
    hasAssociation: async (t, p, c) => read(fresh().links, t, p, c) !== undefined,
    listLinks: async (t, id) => {
      const dbs = fresh()
      const links = [...under<StoredLink>(dbs.links, t, id)].map((l) => l.association)
      for (const parent of idsUnder(dbs.parents, t, id)) {
        if (parent === id) continue // already listed as its own child
        const link = read<StoredLink>(dbs.links, t, parent, id)
        if (link) links.push(link.association)
      }
      return links
    },
    listChildren: async (t, parentId, query) => {
      const dbs = fresh()
      const types = query.types?.length ? new Set(query.types) : null
      let ids: Iterable<string>
      if (query.ids?.length) {
        ids = [...new Set(query.ids)]
          .flatMap((id) => {
            const link = read<StoredLink>(dbs.links, t, parentId, id)
            return link ? [{ id, seq: link.seq }] : []
          })
          .sort((a, b) => a.seq - b.seq)
          .map((c) => c.id)
      } else ids = under<string>(dbs.children, t, parentId)
      const items: StoredToken[] = []
      // A page ends within STORE_PAGE_BYTES: no page of large children is read and opened whole.
      const fill = new PageFill()
      let full = false
      let total = 0
      for (const id of ids) {
        const token = read<StoredToken>(dbs.tokens, t, id)
        if (!live(token, query.now) || (types && !types.has(token.type))) continue
        if (total >= query.offset && items.length < query.limit && !full) {
          if (fill.fits(token)) items.push(token)
          else full = true
        }
        total++
      }
      return { items, total }
    },
    listTokens: async (t, query) => {
      const dbs = fresh()
      const types = query.types?.length ? new Set(query.types) : null
      let ids: string[] | null = query.ids?.length ? [...new Set(query.ids)] : null
      if (query.fingerprint !== undefined) {
        const term = termPart(termKey({ kind: 'fingerprint', value: query.fingerprint }))
        const marked = new Set(idsUnder(dbs.terms, t, term))
        ids = ids ? ids.filter((id) => marked.has(id)) : [...marked]
      } else if (!ids && types) {
        ids = [...types].flatMap((type) => [
          ...idsUnder(dbs.terms, t, termPart(termKey({ kind: 'type', value: type }))),
        ])
      }
      const items: StoredToken[] = []
      // A page ends within STORE_PAGE_BYTES: no page of large tokens is read and opened whole.
      const fill = new PageFill()
      let full = false
      let total = 0
      const take = (token: StoredToken | undefined) => {
        if (!live(token, query.now) || (types && !types.has(token.type))) return
        if (total >= query.offset && items.length < query.limit && !full) {
          if (fill.fits(token)) items.push(token)
          else full = true
        }
        total++
      }
      if (ids) {
        ids.sort(byKey((id) => id))
        for (const id of ids) take(read<StoredToken>(dbs.tokens, t, id))
        return { items, total }
      }
      // No filter but expiry: the tenant's token count (kept in `meta` with every token write), less
      // its expired tokens (keys of the expiry index, nothing decoded); read only up to the page's end.
      const range = prefix(t)
      const expired = dbs.tokenExpiry.getKeysCount({ start: range.start, end: prefix(t, query.now).end })
      const stored = (dbs.meta.get(tokenCountKey(t)) as number | undefined) ?? 0
      for (const token of under<StoredToken>(dbs.tokens, t)) {
        if (items.length >= query.limit) break
        if (!live(token, query.now)) continue
        if (total++ < query.offset) continue
        if (!fill.fits(token)) break
        items.push(token)
      }
      return { items, total: stored - expired }
    },
  }
}

/** Ids by term and by parent (keyset pages), staged writes, and tokens by a list of ids. */
function tokenIdReads(
  fresh: () => Databases,
): Pick<
  StoreReads,
  'findTokenIds' | 'findChildIds' | 'getStaged' | 'listStaged' | 'getTokenHeads' | 'getTokens'
> {
  return {
    findTokenIds: async (t, { term, after, limit }) => {
      const dbs = fresh()
      if (term?.kind === 'id') {
        const found =
          (after === undefined || term.value > after) && read(dbs.tokens, t, term.value) !== undefined
        return found && limit > 0 ? [term.value] : []
      }
      if (term === undefined) return keysetUnder(dbs.tokens, [t], after, limit)
      return keysetUnder(dbs.terms, [t, termPart(termKey(term))], after, limit)
    },
    findChildIds: async (t, parentId, { after, limit }) => {
      const dbs = fresh()
      if (limit <= 0) return []
      const range = prefix(t, parentId)
      const start =
        after === undefined ? range.start : Buffer.concat([key(t, parentId, after), Buffer.from([0])])
      const out: ChildKey[] = []
      for (const { key: k, value } of dbs.children.getRange({ start, end: range.end, limit }))
        out.push({ id: value as string, key: (k as Buffer).subarray(range.start.length).toString('utf8') })
      return out
    },
    getStaged: async (t, tx, ids) => {
      const dbs = fresh()
      const out: StagedWrite[] = []
      for (const id of new Set(ids)) {
        const w = read<StagedWrite>(dbs.staged, t, tx, id)
        if (w) out.push(w)
      }
      return out
    },
    listStaged: async (t, tx, { after, limit }) => {
      const dbs = fresh()
      if (limit <= 0) return []
      const range = prefix(t, tx)
      const start = after === undefined ? range.start : Buffer.concat([key(t, tx, after), Buffer.from([0])])
      const out: StagedWrite[] = []
      for (const { value } of dbs.staged.getRange({ start, end: range.end, limit }))
        out.push(value as StagedWrite)
      return out
    },
    getTokenHeads: async (t, ids) => {
      const dbs = fresh()
      const out: TokenHead[] = []
      for (const id of new Set(ids)) {
        const token = read<StoredToken>(dbs.tokens, t, id)
        if (token) out.push({ ...headOf(token), stored_bytes: storedBytes(token) })
      }
      return out
    },
    getTokens: async (t, ids) => {
      const dbs = fresh()
      const out: StoredToken[] = []
      for (const id of new Set(ids)) {
        const token = read<StoredToken>(dbs.tokens, t, id)
        if (token) out.push(token)
      }
      return out
    },
  }
}

/** Transactions, sessions, formulas, reactors and kept answers. */
function recordReads(
  fresh: () => Databases,
): Pick<
  StoreReads,
  | 'getTransaction'
  | 'getSessionByNonce'
  | 'getFormula'
  | 'listFormulas'
  | 'getReactor'
  | 'listReactors'
  | 'getIdempotency'
  | 'listIdempotency'
  | 'listTransactions'
> {
  return {
    getTransaction: async (t, id) => read(fresh().transactions, t, id) ?? null,
    listTransactions: async (t, { after, limit }) => valuesAfter(fresh().transactions, [t], after, limit),
    getSessionByNonce: async (t, hash) => {
      const dbs = fresh()
      const id = read<string>(dbs.nonces, t, hash)
      return (id === undefined ? undefined : read<StoredSession>(dbs.sessions, t, id)) ?? null
    },
    getFormula: async (t, id) => {
      const dbs = fresh()
      return (
        (t === null ? undefined : read<StoredFormula>(dbs.formulas, t, id)) ??
        read(dbs.formulas, '', id) ??
        null
      )
    },
    listFormulas: async (t, query) => {
      const dbs = fresh()
      const match = nameMatcher(query.name)
      const found = [...under<StoredFormula>(dbs.formulas, ''), ...under<StoredFormula>(dbs.formulas, t)]
        .filter((f) => match(f.name))
        .sort(byKey((f) => `${f.name}\u0000${f.id}\u0000${f.tenant_id === null ? '\u0000' : '\u0001'}`))
      return slice(found, query.offset, query.limit)
    },
    getReactor: async (t, id) => read(fresh().reactors, t, id) ?? null,
    listReactors: async (t, query) => {
      const match = nameMatcher(query.name)
      const ids = query.ids?.length ? new Set(query.ids) : null
      const found = [...under<Reactor>(fresh().reactors, t)]
        .filter((r) => match(r.name) && (!ids || ids.has(r.id)))
        .sort(byKey((r) => `${r.created_at}\u0000${r.id}`))
      return slice(found, query.offset, query.limit)
    },
    getIdempotency: async (t, id) => read(fresh().idempotency, t, id) ?? null,
    listIdempotency: async (t, { after, limit }) => valuesAfter(fresh().idempotency, [t], after, limit),
  }
}

/** The records whose time is up, by kind, oldest first. */
function expiredReads(fresh: () => Databases): Pick<StoreReads, 'listExpired'> {
  return {
    listExpired: async (query) => {
      const out: RecordKey[] = []
      if (query.limit <= 0) return out
      const kind: ExpiringKind = query.kind
      switch (kind) {
        case 'token':
        case 'token.cvc':
        case 'session':
        case 'application':
        case 'transaction.open':
        case 'transaction.ended':
        case 'idempotency':
        case 'outbox':
        case 'token_intent':
          break
        default:
          assertNever(kind)
      }
      for (const e of under<Expiring>(fresh().expiring, kind)) {
        if (e.at > query.before || out.length >= query.limit) break
        out.push({ tenant_id: e.tenant_id, id: e.id })
      }
      return out
    },
  }
}

/** Every record of the databases, each kind sorted as the memory store sorts it. */
function lmdbDump(dbs: Databases): StoreDump {
  const sorted = <T>(values: T[], by: (t: T) => string) => values.sort(byKey(by))
  return {
    tenants: sorted(all(dbs.tenants), (t) => t.id),
    applications: sorted(all<StoredApplication>(dbs.applications), (a) => k(a.tenant_id, a.id)),
    tokens: sorted(all<StoredToken>(dbs.tokens).map(portableToken), (t) => k(t.tenant_id, t.id)),
    associations: sorted(
      all<StoredLink>(dbs.links).map((l): Association => l.association),
      (a) => `${k(a.tenant_id, a.parent_id)}\u0000${a.child_id}`,
    ),
    transactions: sorted(all(dbs.transactions), (t) => k(t.tenant_id, t.id)),
    staged: sorted(
      all<StagedWrite>(dbs.staged),
      (w) => `${k(w.tenant_id, w.transaction_id)}\u0000${w.token_id}`,
    ),
    sessions: sorted(all<StoredSession>(dbs.sessions), (s) => k(s.tenant_id, s.id)),
    formulas: sorted(all<StoredFormula>(dbs.formulas), (f) => k(f.tenant_id, f.id)),
    reactors: sorted(all<Reactor>(dbs.reactors), (r) => k(r.tenant_id, r.id)),
    idempotency: sorted(all(dbs.idempotency), (r) => k(r.tenant_id, r.id)),
    webhooks: all(dbs.webhooks),
    client_keys: allClientKeys(dbs),
    proxies: allProxies(dbs),
    ...allDocuments(dbs),
    token_intents: allTokenIntents(dbs),
    outbox: all(dbs.outbox),
  }
}
