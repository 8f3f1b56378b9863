import * as v from 'valibot'
import type { Keyring } from '../encryption/index.js'
import { publicTenant } from '../encryption/index.js'
import type { Association, StagedWrite, StoredToken, StoredTransaction, Tenant } from '../kernel/index.js'
import { parse } from '../kernel/index.js'
import { withSearchIndexes } from '../search/index.js'
import type { Op, Store, StoreDump } from '../store/index.js'
import { refingerprinted } from '../tokens/index.js'
import { allStaged, lockOps } from '../transactions/index.js'

/**
 * The whole state of a service as one JSON value: every record, tokens with their data **in the
 * clear** (opened, so that a snapshot restores under any master key and into any store), tenants
 * without their wrapped data keys, associations in link order, and the clock's time; every
 * object's members in code-point order, so equal states give equal bytes on every store. A test
 * artifact: never snapshot a vault that holds real data.
 */
export interface StateSnapshot {
  format: 'tokenvault.snapshot'
  version: 1
  /** The service clock's time when it was taken; restoring sets a manual clock back to it. */
  clock: string
  records: StoreDump
}

/** Any time before every expiry: listing children "now" at this instant skips none. */
const DAWN = '0001-01-01T00:00:00.000Z'
const PAGE = 1000

const record = v.looseObject({ tenant_id: v.nullable(v.string()), id: v.string() })
const snapshotSchema = v.strictObject({
  format: v.literal('tokenvault.snapshot'),
  version: v.literal(1),
  clock: v.pipe(v.string(), v.isoTimestamp()),
  records: v.strictObject({
    tenants: v.array(v.looseObject({ id: v.string(), name: v.string(), created_at: v.string() })),
    applications: v.array(v.looseObject({ tenant_id: v.string(), id: v.string() })),
    tokens: v.array(v.looseObject({ tenant_id: v.string(), id: v.string(), type: v.string() })),
    associations: v.array(
      v.strictObject({
        tenant_id: v.string(),
        parent_id: v.string(),
        child_id: v.string(),
        created_at: v.string(),
      }),
    ),
    transactions: v.array(v.looseObject({ tenant_id: v.string(), id: v.string(), version: v.number() })),
    staged: v.array(
      v.looseObject({
        tenant_id: v.string(),
        transaction_id: v.string(),
        token_id: v.string(),
        seq: v.number(),
        token: v.nullable(v.looseObject({ tenant_id: v.string(), id: v.string(), type: v.string() })),
      }),
    ),
    sessions: v.array(v.looseObject({ tenant_id: v.string(), id: v.string(), key_hash: v.string() })),
    formulas: v.array(record),
    reactors: v.array(v.looseObject({ tenant_id: v.string(), id: v.string() })),
    idempotency: v.optional(v.array(v.unknown())),
    // Snapshots taken before these records existed lack the lists: read as empty.
    proxies: v.optional(v.array(v.looseObject({ tenant_id: v.string(), id: v.string() }))),
    token_intents: v.optional(
      v.array(
        v.looseObject({ tenant_id: v.string(), id: v.string(), type: v.string(), expires_at: v.string() }),
      ),
    ),
    // Client keys are never in a snapshot (see `takeSnapshot`): the list is empty when present.
    client_keys: v.optional(v.tuple([])),
    webhooks: v.optional(v.array(v.looseObject({ tenant_id: v.string(), id: v.string() }))),
    outbox: v.optional(v.array(v.unknown())),
    documents: v.optional(v.array(v.looseObject({ tenant_id: v.string(), id: v.string() }))),
    document_chunks: v.optional(
      v.array(
        v.looseObject({
          tenant_id: v.string(),
          document_id: v.string(),
          index: v.number(),
          data: v.string(),
        }),
      ),
    ),
  }),
})

/** Checks that `value` has the shape of a snapshot (a 400 naming the path of what is wrong). */
export function parseSnapshot(value: unknown): StateSnapshot {
  parse(snapshotSchema, value)
  // The records as given (a parse would reorder their members): a copy the caller can't change.
  return structuredClone(value) as StateSnapshot
}

/**
 * The token without its keyed hashes (search index hashes, fingerprint): keyed under the tenant's
 * data key, which a restore replaces, they are made again from the data then (see
 * `restoreSnapshot`), so a snapshot restored and taken again is the same.
 */
function unhashed(token: StoredToken): StoredToken {
  const { search_index_hashes: _hashes, fingerprint: _fingerprint, ...rest } = token
  return rest
}

/**
 * Takes a snapshot of `store` (the service's sealed store: tokens and reactor configurations come
 * out opened). Associations
 * are listed per parent in link order, so a restore links them in the same order.
 */
export async function takeSnapshot(store: Store, clock: string): Promise<StateSnapshot> {
  const dump = await store.dump()
  const opened = async (t: StoredToken) => unhashed((await store.getToken(t.tenant_id, t.id)) ?? t)
  const tokens = await Promise.all(dump.tokens.map(opened))
  // Reactor configurations are sealed at rest too: opened, as tokens are.
  const reactors = await Promise.all(
    dump.reactors.map(async (r) => (await store.getReactor(r.tenant_id, r.id)) ?? r),
  )
  // Staged tokens are sealed at rest too: read opened, a transaction at a time.
  const staged: StagedWrite[] = []
  for (const t of dump.transactions)
    for (const w of await allStaged(store, t)) staged.push({ ...w, token: w.token && unhashed(w.token) })
  const parents = new Map<string, Association[]>()
  for (const a of dump.associations) {
    const key = `${a.tenant_id}\u0000${a.parent_id}`
    parents.set(key, [...(parents.get(key) ?? []), a])
  }
  const associations: Association[] = []
  for (const links of parents.values()) {
    const { tenant_id, parent_id } = links[0]!
    const byChild = new Map(links.map((a) => [a.child_id, a]))
    for (let offset = 0; ; offset += PAGE) {
      const page = await store.listChildren(tenant_id, parent_id, { offset, limit: PAGE, now: DAWN })
      for (const child of page.items) {
        const link = byChild.get(child.id)
        if (link) {
          associations.push(link)
          byChild.delete(child.id)
        }
      }
      if (page.items.length < PAGE) break
    }
    associations.push(...byChild.values())
  }
  // Proxy configurations are sealed at rest too: opened, as reactors' are.
  const proxies = await Promise.all(
    dump.proxies.map(async (p) => (await store.getProxy(p.tenant_id, p.id)) ?? p),
  )
  // Token intents' data is sealed at rest too: opened, without the fingerprint (a keyed hash).
  const tokenIntents = await Promise.all(
    (dump.token_intents ?? []).map(async (i) => {
      const { fingerprint: _fingerprint, ...rest } = (await store.getTokenIntent(i.tenant_id, i.id)) ?? i
      return rest
    }),
  )
  // Documents' chunks are sealed at rest too: opened, one chunk at a time.
  const documentChunks = []
  for (const c of dump.document_chunks ?? [])
    documentChunks.push((await store.getDocumentChunk(c.tenant_id, c.document_id, c.index)) ?? c)
  // Idempotency records are a cache of first answers, and outbox entries deliveries owed by this
  // store (sealed under keys a restore replaces, signed by its service): both left out.
  const records = {
    ...dump,
    // Without their keys: a restore makes new ones under its own master key.
    tenants: dump.tenants.map(publicTenant),
    tokens,
    reactors,
    proxies,
    token_intents: tokenIntents,
    document_chunks: documentChunks,
    staged,
    associations,
    idempotency: [],
    outbox: [],
    // A client key's private key is never in a snapshot: sealed under keys a restore replaces, it
    // would not open, and opened it would be in the clear. Browsers fetch a new key after a restore.
    client_keys: [],
  }
  return { format: 'tokenvault.snapshot', version: 1, clock, records: canonical(records) }
}

/**
 * `value` with every object's members in code-point order: stores keep members in different
 * orders (PostgreSQL's `jsonb` has its own), so snapshots of equal states are equal byte for byte.
 */
function canonical<T>(value: T): T {
  if (Array.isArray(value)) return value.map(canonical) as T
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) out[key] = canonical((value as Record<string, unknown>)[key])
  return out as T
}

/** Deletes of the lock records of every token the transactions staged. */
function lockDeletes(staged: readonly StagedWrite[]): Op[] {
  const seen = new Set<string>()
  const ops: Op[] = []
  for (const w of staged) {
    const key = `${w.tenant_id}\u0000${w.token_id}`
    if (seen.has(key)) continue
    seen.add(key)
    ops.push({ op: 'lock.delete', tenant_id: w.tenant_id, token_id: w.token_id })
  }
  return ops
}

/** The lock records the open transactions of a snapshot hold: each staged token's last open one. */
function lockPuts(transactions: readonly StoredTransaction[], staged: readonly StagedWrite[]): Op[] {
  const open = new Map(
    transactions.filter((t) => t.state === 'open').map((t) => [`${t.tenant_id}\u0000${t.id}`, t]),
  )
  const holders = new Map<string, { t: StoredTransaction; id: string }>()
  for (const w of staged) {
    const t = open.get(`${w.tenant_id}\u0000${w.transaction_id}`)
    if (t) holders.set(`${w.tenant_id}\u0000${w.token_id}`, { t, id: w.token_id })
  }
  return [...holders.values()].flatMap(({ t, id }) => lockOps(t, [id]))
}

/** The deletes that empty `dump` (children before what they hang on, tenants last). */
function deletesOf(dump: StoreDump): Op[] {
  return [
    ...dump.associations.map(
      (a): Op => ({
        op: 'association.delete',
        tenant_id: a.tenant_id,
        parent_id: a.parent_id,
        child_id: a.child_id,
      }),
    ),
    ...dump.sessions.map((s): Op => ({ op: 'session.delete', tenant_id: s.tenant_id, id: s.id })),
    // A lock record names a transaction that staged its token: these are all there are.
    ...lockDeletes(dump.staged),
    ...dump.staged.map(
      (w): Op => ({
        op: 'staged.delete',
        tenant_id: w.tenant_id,
        transaction_id: w.transaction_id,
        token_id: w.token_id,
      }),
    ),
    ...dump.transactions.map((t): Op => ({ op: 'transaction.delete', tenant_id: t.tenant_id, id: t.id })),
    ...dump.tokens.map((t): Op => ({ op: 'token.delete', tenant_id: t.tenant_id, id: t.id })),
    ...dump.reactors.map((r): Op => ({ op: 'reactor.delete', tenant_id: r.tenant_id, id: r.id })),
    // A formula-use record names a reactor that runs its formula: these are all there are.
    ...dump.reactors.flatMap((r): Op[] =>
      r.formula_id === undefined
        ? []
        : [{ op: 'formula_use.delete', formula_id: r.formula_id, tenant_id: r.tenant_id, reactor_id: r.id }],
    ),
    ...dump.formulas.map((f): Op => ({ op: 'formula.delete', tenant_id: f.tenant_id, id: f.id })),
    ...dump.applications.map((a): Op => ({ op: 'application.delete', tenant_id: a.tenant_id, id: a.id })),
    ...dump.idempotency.map((r): Op => ({ op: 'idempotency.delete', tenant_id: r.tenant_id, id: r.id })),
    ...(dump.client_keys ?? []).map(
      (k): Op => ({ op: 'client_key.delete', tenant_id: k.tenant_id, id: k.id }),
    ),
    ...(dump.proxies ?? []).map((p): Op => ({ op: 'proxy.delete', tenant_id: p.tenant_id, id: p.id })),
    ...(dump.token_intents ?? []).map(
      (i): Op => ({ op: 'token_intent.delete', tenant_id: i.tenant_id, id: i.id }),
    ),
    ...(dump.webhooks ?? []).map((w): Op => ({ op: 'webhook.delete', tenant_id: w.tenant_id, id: w.id })),
    ...(dump.outbox ?? []).map((e): Op => ({ op: 'outbox.delete', tenant_id: e.tenant_id, id: e.id })),
    ...documentDeletes(dump),
    ...dump.tenants.map((t): Op => ({ op: 'tenant.delete', id: t.id })),
  ]
}

/** A `document.delete` per document of `dump`: each head, and each document its chunks name. */
function documentDeletes(dump: StoreDump): Op[] {
  const ids = new Map<string, Op>()
  for (const d of dump.documents ?? [])
    ids.set(`${d.tenant_id}\u0000${d.id}`, { op: 'document.delete', tenant_id: d.tenant_id, id: d.id })
  for (const c of dump.document_chunks ?? [])
    ids.set(`${c.tenant_id}\u0000${c.document_id}`, {
      op: 'document.delete',
      tenant_id: c.tenant_id,
      id: c.document_id,
    })
  return [...ids.values()]
}

const BATCH = 500

/** Writes `ops` in batches (a store's write is one transaction; huge ones help nobody). */
async function writeAll(store: Store, ops: Op[]): Promise<void> {
  for (let i = 0; i < ops.length; i += BATCH) {
    const result = await store.write({ ops: ops.slice(i, i + BATCH) })
    if (!result.ok) throw new Error('restoring a snapshot: a write was refused')
  }
}

/** Deletes every record `store` holds. */
export async function clearState(store: Store, dump?: StoreDump): Promise<void> {
  await writeAll(store, deletesOf(dump ?? (await store.dump())))
}

/** Deletes every record of the tenants `ids`, the tenants included; other tenants are untouched. */
export async function deleteTenants(store: Store, ids: readonly string[]): Promise<void> {
  if (!ids.length) return
  const gone = new Set(ids)
  const dump = await store.dump()
  const mine = <T extends { tenant_id: string | null }>(list: T[]) =>
    list.filter((r) => r.tenant_id !== null && gone.has(r.tenant_id))
  await writeAll(
    store,
    deletesOf({
      ...dump,
      tenants: dump.tenants.filter((t) => gone.has(t.id)),
      applications: mine(dump.applications),
      tokens: mine(dump.tokens),
      associations: mine(dump.associations),
      transactions: mine(dump.transactions),
      staged: mine(dump.staged),
      sessions: mine(dump.sessions),
      formulas: mine(dump.formulas),
      reactors: mine(dump.reactors),
      idempotency: mine(dump.idempotency),
      client_keys: mine(dump.client_keys ?? []),
      proxies: mine(dump.proxies ?? []),
      token_intents: mine(dump.token_intents ?? []),
      webhooks: mine(dump.webhooks ?? []),
      outbox: mine(dump.outbox ?? []),
      documents: mine(dump.documents ?? []),
      document_chunks: mine(dump.document_chunks ?? []),
    }),
  )
}

/** The keys `tenant` holds (its root key and data-key versions, wrapped), when it holds both. */
function keysHeld(tenant: Tenant | undefined): Required<Pick<Tenant, 'data_key' | 'keys'>> | undefined {
  if (tenant?.data_key === undefined || tenant.keys === undefined) return undefined
  return { data_key: tenant.data_key, keys: tenant.keys }
}

/**
 * Replaces everything `store` (the service's sealed store) holds with `snapshot`: deletes every
 * record, then puts the snapshot's — tenants with the keys they held (new data keys under this
 * service's master key for a tenant the store did not hold),
 * tokens sealed under them, associations in the snapshot's (link) order.
 */
export async function restoreSnapshot(
  store: Store,
  keyring: Keyring,
  snapshot: StateSnapshot,
): Promise<void> {
  const r = snapshot.records
  const before = await store.dump()
  await clearState(store, before)
  // A tenant the store holds keeps its keys: another process of a shared store (a file store or a
  // database) holding them unwrapped reads what is restored, and its keyed hashes (fingerprints,
  // search indexes) stay the ones made here. A tenant new to the store gets new keys.
  const held = new Map(before.tenants.map((t) => [t.id, t]))
  const tenants: Op[] = []
  for (const t of r.tenants) {
    tenants.push({
      op: 'tenant.put',
      tenant: {
        ...publicTenant(t),
        ...(keysHeld(held.get(t.id)) ?? (await keyring.newTenantKeys(t.id, snapshot.clock))),
      },
    })
  }
  // The tenants first: the keyring reads a tenant's keys from the store to hash and seal under them.
  await writeAll(store, tenants)
  // Keys the keyring still holds for these tenant ids are those of the state just cleared.
  for (const t of r.tenants) keyring.forget(t.id)
  // Fingerprints, like search indexes, are keyed hashes under the tenant key, new here: make them again.
  const rehash = (token: StoredToken) =>
    refingerprinted(withSearchIndexes(token, token.search_indexes), (purpose, value) =>
      keyring.hmac(token.tenant_id, purpose, value),
    )
  const tokens = await Promise.all(r.tokens.map(rehash))
  // An intent's fingerprint is made again as a token's: the same type and data, keyed anew.
  const intents = await Promise.all(
    (r.token_intents ?? []).map(async (intent) => {
      const { fingerprint } = await rehash({ ...intent, containers: [], metadata: {} })
      return fingerprint === undefined ? intent : { ...intent, fingerprint }
    }),
  )
  const staged = await Promise.all(
    r.staged.map(async (w): Promise<StagedWrite> => ({ ...w, token: w.token && (await rehash(w.token)) })),
  )
  await writeAll(store, [
    ...r.applications.map((application): Op => ({ op: 'application.put', application })),
    ...r.formulas.map((formula): Op => ({ op: 'formula.put', formula })),
    ...r.reactors.flatMap((reactor): Op[] => [
      { op: 'reactor.put', reactor },
      ...(reactor.formula_id === undefined
        ? []
        : [
            {
              op: 'formula_use.put' as const,
              use: { formula_id: reactor.formula_id, tenant_id: reactor.tenant_id, reactor_id: reactor.id },
            },
          ]),
    ]),
    ...tokens.map((token): Op => ({ op: 'token.put', token })),
    ...r.associations.map((association): Op => ({ op: 'association.put', association })),
    ...r.transactions.map((transaction): Op => ({ op: 'transaction.put', transaction })),
    ...staged.map((w): Op => ({ op: 'staged.put', staged: w })),
    ...lockPuts(r.transactions, r.staged),
    ...r.sessions.map((session): Op => ({ op: 'session.put', session })),
    ...(r.proxies ?? []).map((proxy): Op => ({ op: 'proxy.put', proxy })),
    ...intents.map((intent): Op => ({ op: 'token_intent.put', intent })),
    ...(r.webhooks ?? []).map((webhook): Op => ({ op: 'webhook.put', webhook })),
    ...(r.documents ?? []).map((document): Op => ({ op: 'document.put', document })),
    ...(r.document_chunks ?? []).map((chunk): Op => ({ op: 'document_chunk.put', chunk })),
  ])
}
