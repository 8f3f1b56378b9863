import type { QueryConfig, QueryResult } from 'pg'
import type {
  Association,
  IdempotencyRecord,
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
import type { Page, Range, Store, StoreDump } from '../../src/store/index.js'
import { STORE_PAGE_BYTES } from '../../src/store/index.js'
import { prepared as call, likePattern } from './keys.js'
import type { Tables } from './statements.js'
import { tokenBytesOf, tokenHeadOf } from './token-heads.js'

/** A statement, and the line of the store's gate it waits in when not its tenant's (`gateLineOf`). */
export type GatedQuery = QueryConfig & { line?: string }

type Query = (config: GatedQuery) => Promise<QueryResult>

/**
 * The gate's line of every key lookup (`findKey`): a key is looked up before its tenant is known,
 * and lookups of made-up keys, each a line of its own by its hash, took a share of the pool each
 * (a keyless flood held other tenants' reads back by 50-140 ms, and their new keys' lookups 429).
 */
export const KEY_LOOKUPS_LINE = '\u0000key lookups'

/** The gate's line of a statement: its `line`, else its first value (each read names its tenant first). */
export const gateLineOf = (config: GatedQuery): string => {
  if (config.line !== undefined) return config.line
  const first = config.values?.[0]
  return typeof first === 'string' ? first : ''
}

/** How the store reads: one statement per call, so each read sees one consistent snapshot. */
export type Reads = Omit<
  Store,
  | 'write'
  | 'listExpired'
  | 'close'
  | 'getWebhook'
  | 'listWebhooks'
  | 'getOutbox'
  | 'listOutbox'
  | 'listDueOutbox'
  | 'listLogs'
  | 'unindexedLog'
  | 'getClientKey'
  | 'listClientKeys'
  | 'getProxy'
  | 'listProxies'
  | 'getTokenIntent'
  | 'listTokenIntents'
  | 'listDocuments'
  | 'getDocument'
  | 'getDocumentChunk'
>

/** Orders like `MemoryState`'s `byKey`: JavaScript string comparison of a key. */
const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T) => {
    const ka = key(a)
    const kb = key(b)
    return ka < kb ? -1 : ka > kb ? 1 : 0
  }
const k = (tenantId: string | null, id: string) => `${tenantId ?? ''}\u0000${id}`

/**
 * A page of `source` (a `FROM … WHERE …` yielding `ord` and `doc`): the count of every match and
 * the docs from `offset` on, in `ord` order, in one statement.
 */
function pageSql(source: string, offsetParam: string, limitParam: string): string {
  return `WITH m AS (${source})
    SELECT (SELECT count(*) FROM m)::int AS total,
      (SELECT coalesce(json_agg(p.doc ORDER BY p.ord), '[]')::text
        FROM (SELECT ord, doc FROM m ORDER BY ord OFFSET ${offsetParam} LIMIT ${limitParam}) p) AS items`
}

/**
 * A page of tokens from `source` (a `FROM … WHERE …` yielding `ord`, a token's `doc` and its
 * `bytes`, its `tokenBytesOf`), as `pageSql`, that ends within STORE_PAGE_BYTES of sealed data (its
 * first token always in it).
 */
function tokenPageSql(source: string, offsetParam: string, limitParam: string): string {
  return `WITH m AS (${source})
    SELECT (SELECT count(*) FROM m)::int AS total,
      (SELECT coalesce(json_agg(p.doc ORDER BY p.ord), '[]')::text FROM (SELECT ord, doc,
          row_number() OVER (ORDER BY ord) AS n, sum(bytes) OVER (ORDER BY ord) AS run
        FROM (SELECT ord, doc, bytes FROM m ORDER BY ord OFFSET ${offsetParam} LIMIT ${limitParam}) q) p
        WHERE p.n = 1 OR p.run <= ${STORE_PAGE_BYTES}) AS items`
}

/** The read side of the store over these tables. Every row's `doc` comes back parsed, as a fresh copy. */
export function reads(t: Tables, query: Query): Reads {
  const kit = readKit(t, query)
  return {
    ...tenantReads(t, kit),
    ...tokenReads(t, kit),
    ...tokenIdReads(t, kit),
    ...recordReads(t, kit),
    ...keysetReads(t, kit),
    dump: () => dumpRows(t, query),
  }
}

/** The helpers and fixed SQL the read methods share. */
function readKit(t: Tables, query: Query) {
  const prepared = (text: string, values: unknown[]) => query(call(text, values))
  const one = async <T>(text: string, values: unknown[]): Promise<T | null> => {
    const row = (await prepared(text, values)).rows[0] as { doc: string | null } | undefined
    return row?.doc == null ? null : (JSON.parse(row.doc) as T)
  }
  const page = async <T>(text: string, values: unknown[], range: Range): Promise<Page<T>> => {
    const offset = Math.max(0, range.offset)
    const limit = Math.max(0, range.limit)
    const row = (await prepared(text, [...values, offset, limit])).rows[0] as { total: number; items: string }
    return { items: JSON.parse(row.items) as T[], total: row.total }
  }
  /** The exact-term index beside the tokens (containers, metadata, search-index hashes), in the tokens' schema. */
  const tokenTerms = `${t.tokens.slice(0, -'tokens'.length)}token_terms`
  /** The tokens among `ids`, each as `select` shapes its doc, in the order of `ids`, once each. */
  const some = async <T extends { id: string }>(
    select: string,
    tenantId: string,
    ids: readonly string[],
  ): Promise<T[]> => {
    const unique = [...new Set(ids)]
    if (!unique.length) return []
    const { rows } = await prepared(
      `${select}, id FROM ${t.tokens} WHERE tenant_id = $1 AND id = ANY ($2::text[])`,
      [tenantId, unique],
    )
    const byId = new Map(rows.map((row) => [(row as { id: string }).id, (row as { doc: string }).doc]))
    return unique.flatMap((id) => {
      const doc = byId.get(id)
      return doc === undefined ? [] : [JSON.parse(doc) as T]
    })
  }
  const byTenant = (table: string) =>
    pageSql(`SELECT sort_key AS ord, doc FROM ${table} WHERE tenant_id = $1`, '$2', '$3')
  const listApplicationsSql = byTenant(t.applications)
  const listApplicationsByIdSql = pageSql(
    `SELECT sort_key AS ord, doc FROM ${t.applications} WHERE tenant_id = $1 AND id = ANY ($2::text[])`,
    '$3',
    '$4',
  )
  const byId = (table: string) => `SELECT doc::text AS doc FROM ${table} WHERE tenant_id = $1 AND id = $2`
  const sql = {
    tenant: `SELECT doc::text AS doc FROM ${t.tenants} WHERE id = $1`,
    application: byId(t.applications),
    token: byId(t.tokens),
    transaction: byId(t.transactions),
    reactor: byId(t.reactors),
    idempotency: byId(t.idempotency),
  }
  return { query, prepared, one, page, tokenTerms, some, listApplicationsSql, listApplicationsByIdSql, sql }
}

type ReadKit = ReturnType<typeof readKit>

/** Tenants, their keys and applications. */
function tenantReads(
  t: Tables,
  kit: ReadKit,
): Pick<
  Reads,
  'getTenant' | 'listTenants' | 'hasTenants' | 'findKey' | 'getApplication' | 'listApplications'
> {
  const { query, prepared, one, page, listApplicationsSql, listApplicationsByIdSql, sql } = kit
  return {
    getTenant: (id) => one(sql.tenant, [id]),
    listTenants: async () => {
      const { rows } = await prepared(`SELECT doc::text AS doc FROM ${t.tenants} ORDER BY id`, [])
      return rows.map((row) => JSON.parse((row as { doc: string }).doc) as Tenant)
    },
    hasTenants: async () =>
      (await prepared(`SELECT EXISTS (SELECT 1 FROM ${t.tenants}) AS any`, [])).rows[0]?.any === true,
    findKey: async (keyHash) => {
      const statement = call(
        `SELECT k.kind, coalesce(a.doc, s.doc)::text AS doc FROM ${t.apiKeys} k
         LEFT JOIN ${t.applications} a ON k.kind = 'application' AND a.tenant_id = k.tenant_id AND a.id = k.id
         LEFT JOIN ${t.sessions} s ON k.kind = 'session' AND s.tenant_id = k.tenant_id AND s.id = k.id
         WHERE k.key_hash = $1`,
        [keyHash],
      )
      // Set on the call itself: a prepared call holds its name and text in its prototype.
      ;(statement as GatedQuery).line = KEY_LOOKUPS_LINE
      const { rows } = await query(statement)
      const row = rows[0] as { kind: 'application' | 'session'; doc: string | null } | undefined
      if (!row || row.doc === null) return null
      return row.kind === 'application'
        ? { kind: 'application', application: JSON.parse(row.doc) as StoredApplication }
        : { kind: 'session', session: JSON.parse(row.doc) as StoredSession }
    },
    getApplication: (tenantId, id) => one(sql.application, [tenantId, id]),
    listApplications: (tenantId, q) =>
      q.ids?.length
        ? page(listApplicationsByIdSql, [tenantId, q.ids], q)
        : page(listApplicationsSql, [tenantId], q),
  }
}

/** Tokens by id, their links and their pages. */
function tokenReads(
  t: Tables,
  kit: ReadKit,
): Pick<Reads, 'getToken' | 'hasAssociation' | 'listLinks' | 'listTokens' | 'listChildren'> {
  const { prepared, one, page, sql } = kit
  return {
    getToken: (tenantId, id) => one(sql.token, [tenantId, id]),
    hasAssociation: async (tenantId, parentId, childId) => {
      const { rowCount } = await prepared(
        `SELECT 1 FROM ${t.associations} WHERE tenant_id = $1 AND parent_id = $2 AND child_id = $3`,
        [tenantId, parentId, childId],
      )
      return (rowCount ?? 0) > 0
    },
    listLinks: async (tenantId, tokenId) => {
      const { rows } = await prepared(
        `SELECT doc::text AS doc FROM ${t.associations} WHERE tenant_id = $1 AND parent_id = $2
         UNION ALL
         SELECT doc::text AS doc FROM ${t.associations} WHERE tenant_id = $1 AND child_id = $2 AND parent_id <> $2`,
        [tenantId, tokenId],
      )
      return rows.map((row) => JSON.parse((row as { doc: string }).doc) as Association)
    },
    listTokens: (tenantId, q) => {
      const values: unknown[] = [tenantId, q.now]
      let filters = ''
      if (q.ids?.length) {
        values.push(q.ids)
        filters += ` AND id = ANY ($${values.length}::text[])`
      }
      if (q.types?.length) {
        values.push(q.types)
        filters += ` AND type = ANY ($${values.length}::text[])`
      }
      if (q.fingerprint !== undefined) {
        values.push(q.fingerprint)
        filters += ` AND (doc ->> 'fingerprint') COLLATE "C" = $${values.length}`
      }
      // The count reads no doc (the v1 total costs a count, never the records); the page reads its own.
      // Unfiltered, it is the tenant's kept token count less its expired tokens (an index range).
      const where = `tenant_id = $1 AND (expires_at IS NULL OR expires_at > $2)${filters}`
      const count = filters
        ? `(SELECT count(*) FROM ${t.tokens} WHERE ${where})`
        : `(coalesce((SELECT sum(n) FROM ${t.tokenCounts} WHERE tenant_id = $1), 0)
            - (SELECT count(*) FROM ${t.tokens} WHERE tenant_id = $1 AND expires_at <= $2))`
      // The page ends within STORE_PAGE_BYTES of sealed data (its first token always in it).
      const text = `SELECT ${count}::int AS total,
        (SELECT coalesce(json_agg(p.doc ORDER BY p.id), '[]')::text FROM (SELECT id, doc,
            row_number() OVER (ORDER BY id) AS n, sum(bytes) OVER (ORDER BY id) AS run
          FROM (SELECT id, doc, ${tokenBytesOf(t.schema)} AS bytes FROM ${t.tokens} WHERE ${where}
            ORDER BY id OFFSET $${values.length + 1} LIMIT $${values.length + 2}) q) p
          WHERE p.n = 1 OR p.run <= ${STORE_PAGE_BYTES}) AS items`
      return page(text, values, q)
    },
    listChildren: (tenantId, parentId, q) => {
      const values: unknown[] = [tenantId, parentId, q.now]
      let filters = ''
      if (q.ids?.length) {
        values.push(q.ids)
        filters += ` AND a.child_id = ANY ($${values.length}::text[])`
      }
      if (q.types?.length) {
        values.push(q.types)
        filters += ` AND c.type = ANY ($${values.length}::text[])`
      }
      const source = `SELECT a.seq AS ord, c.doc, ${tokenBytesOf(t.schema, 'c.')} AS bytes FROM ${t.associations} a
        JOIN ${t.tokens} c ON c.tenant_id = a.tenant_id AND c.id = a.child_id
        WHERE a.tenant_id = $1 AND a.parent_id = $2 AND (c.expires_at IS NULL OR c.expires_at > $3)${filters}`
      return page(tokenPageSql(source, `$${values.length + 1}`, `$${values.length + 2}`), values, q)
    },
  }
}

/** Ids by term and by parent (keyset pages), and tokens by a list of ids. */
function tokenIdReads(
  t: Tables,
  kit: ReadKit,
): Pick<Reads, 'findTokenIds' | 'findChildIds' | 'getTokenHeads' | 'getTokens'> {
  const { prepared, tokenTerms, some } = kit
  return {
    findTokenIds: async (tenantId, q) => {
      const limit = Math.max(0, Math.floor(q.limit))
      if (limit === 0) return []
      const term = q.term
      // Each shape its own statement, so that the plan is a range of one index in id order.
      const values: unknown[] = [tenantId]
      let where = 'tenant_id = $1'
      let table = t.tokens
      if (term?.kind === 'id') {
        values.push(term.value)
        where += ' AND id = $2'
      } else if (term?.kind === 'type') {
        // `tokens_by_type`.
        values.push(term.value)
        where += ' AND type = $2'
      } else if (term?.kind === 'fingerprint') {
        // `tokens_by_fingerprint`.
        values.push(term.value)
        where += ` AND (doc ->> 'fingerprint') COLLATE "C" = $2`
      } else if (term !== undefined) {
        table = tokenTerms
        values.push(term.kind, term.kind === 'metadata' ? term.key : '', term.value)
        where += ' AND kind = $2 AND name = $3 AND value = $4'
      }
      if (q.after !== undefined) {
        values.push(q.after)
        where += ` AND id > $${values.length}`
      }
      values.push(limit)
      const { rows } = await prepared(
        `SELECT id FROM ${table} WHERE ${where} ORDER BY id LIMIT $${values.length}`,
        values,
      )
      return rows.map((row) => (row as { id: string }).id)
    },
    findChildIds: async (tenantId, parentId, q) => {
      const limit = Math.max(0, Math.floor(q.limit))
      if (limit === 0) return []
      if (q.after !== undefined && !/^\d{1,19}$/.test(q.after)) return []
      const values: unknown[] = [tenantId, parentId, limit]
      if (q.after !== undefined) values.push(q.after)
      const { rows } = await prepared(
        `SELECT child_id, seq::text AS place FROM ${t.associations}
         WHERE tenant_id = $1 AND parent_id = $2${q.after === undefined ? '' : ' AND seq > $4::bigint'}
         ORDER BY seq LIMIT $3`,
        values,
      )
      return rows.map((row) => {
        const r = row as { child_id: string; place: string }
        return { id: r.child_id, key: r.place.padStart(19, '0') }
      })
    },
    // A head carries the bytes its sealed fields take; both are columns of their own, so no
    // filled row's value is read (see token-heads.ts).
    getTokenHeads: (tenantId, ids) =>
      some(
        `SELECT (${tokenHeadOf()} || jsonb_build_object('stored_bytes', ${tokenBytesOf(t.schema)}))::text AS doc`,
        tenantId,
        ids,
      ),
    getTokens: (tenantId, ids) => some(`SELECT doc::text AS doc`, tenantId, ids),
  }
}

/** A tenant's transactions and kept answers in keyset pages by id: what the key lifecycle walks. */
function keysetReads(t: Tables, kit: ReadKit): Pick<Reads, 'listIdempotency' | 'listTransactions'> {
  /** A keyset page of `table`'s docs of the tenant, in id order (code-unit order) after `after`. */
  const keyset = async <T>(table: string, tenantId: string, q: { after?: string; limit: number }) => {
    const limit = Math.max(0, Math.floor(q.limit))
    if (limit === 0) return []
    const { rows } = await kit.prepared(
      `SELECT doc::text AS doc FROM ${table} WHERE tenant_id = $1
        AND ($2::text IS NULL OR id > $2 COLLATE "C") ORDER BY id COLLATE "C" LIMIT $3`,
      [tenantId, q.after ?? null, limit],
    )
    return rows.map((row) => JSON.parse((row as { doc: string }).doc) as T)
  }
  return {
    listTransactions: (tenantId, q) => keyset<StoredTransaction>(t.transactions, tenantId, q),
    listIdempotency: (tenantId, q) => keyset<IdempotencyRecord>(t.idempotency, tenantId, q),
  }
}

/** Transactions, staged writes, sessions, formulas, reactors, kept answers and counts. */
function recordReads(
  t: Tables,
  kit: ReadKit,
): Pick<
  Reads,
  | 'getTransaction'
  | 'getStaged'
  | 'listStaged'
  | 'getSessionByNonce'
  | 'getFormula'
  | 'listFormulas'
  | 'getReactor'
  | 'listReactors'
  | 'getIdempotency'
  | 'countRecords'
> {
  const { prepared, one, page, sql } = kit
  return {
    getTransaction: (tenantId, id) => one(sql.transaction, [tenantId, id]),
    getStaged: async (tenantId, transactionId, tokenIds) => {
      const unique = [...new Set(tokenIds)]
      if (!unique.length) return []
      const { rows } = await prepared(
        `SELECT token_id, doc::text AS doc FROM ${t.stagedWrites}
         WHERE tenant_id = $1 AND transaction_id = $2 AND token_id = ANY ($3::text[])`,
        [tenantId, transactionId, unique],
      )
      const byId = new Map(
        rows.map((row) => [(row as { token_id: string }).token_id, (row as { doc: string }).doc]),
      )
      return unique.flatMap((id) => {
        const doc = byId.get(id)
        return doc === undefined ? [] : [JSON.parse(doc) as StagedWrite]
      })
    },
    listStaged: async (tenantId, transactionId, q) => {
      const limit = Math.max(0, Math.floor(q.limit))
      if (limit === 0) return []
      const values: unknown[] = [tenantId, transactionId, limit]
      if (q.after !== undefined) values.push(q.after)
      const { rows } = await prepared(
        `SELECT doc::text AS doc FROM ${t.stagedWrites} WHERE tenant_id = $1 AND transaction_id = $2${
          q.after === undefined ? '' : ' AND token_id > $4'
        } ORDER BY token_id LIMIT $3`,
        values,
      )
      return rows.map((row) => JSON.parse((row as { doc: string }).doc) as StagedWrite)
    },
    getSessionByNonce: (tenantId, nonceHash) =>
      one(
        `SELECT s.doc::text AS doc FROM ${t.nonces} n
         JOIN ${t.sessions} s ON s.tenant_id = n.tenant_id AND s.id = n.session_id
         WHERE n.tenant_id = $1 AND n.nonce_hash = $2`,
        [tenantId, nonceHash],
      ),
    getFormula: (tenantId, id) =>
      one(
        `SELECT doc::text AS doc FROM ${t.formulas} WHERE tenant_key IN ($1, '') AND id = $2
         ORDER BY tenant_key = '' LIMIT 1`,
        [tenantId ?? '', id],
      ),
    listFormulas: (tenantId, q) => {
      const pattern = likePattern(q.name)
      const values: unknown[] = [tenantId]
      if (pattern !== null) values.push(pattern)
      const filter = pattern === null ? '' : ` AND name_lower LIKE $2`
      // An official formula and a tenant's own one may share name and id: the official one comes
      // first, as in the memory state (its key ends in U+0000 U+0000, the own one's in U+0000 U+0001).
      const source = `SELECT sort_key || CASE WHEN tenant_id IS NULL THEN '\\x00000000'::bytea
          ELSE '\\x00000001'::bytea END AS ord, doc FROM ${t.formulas}
        WHERE (tenant_id IS NULL OR tenant_id = $1)${filter}`
      return page(pageSql(source, `$${values.length + 1}`, `$${values.length + 2}`), values, q)
    },
    getReactor: (tenantId, id) => one(sql.reactor, [tenantId, id]),
    listReactors: (tenantId, q) => {
      const values: unknown[] = [tenantId]
      let filters = ''
      const pattern = likePattern(q.name)
      if (pattern !== null) {
        values.push(pattern)
        filters += ` AND name_lower LIKE $${values.length}`
      }
      if (q.ids?.length) {
        values.push(q.ids)
        filters += ` AND id = ANY ($${values.length}::text[])`
      }
      const source = `SELECT sort_key AS ord, doc FROM ${t.reactors} WHERE tenant_id = $1${filters}`
      return page(pageSql(source, `$${values.length + 1}`, `$${values.length + 2}`), values, q)
    },
    getIdempotency: (tenantId, id) => one(sql.idempotency, [tenantId, id]),
    countRecords: async (tenantId, kind) => {
      const { rows } = await prepared(
        `SELECT coalesce(sum(n), 0)::integer AS n FROM ${t.schema}.record_counts WHERE tenant_id = $1 AND kind = $2`,
        [tenantId, kind],
      )
      return (rows[0] as { n: number } | undefined)?.n ?? 0
    },
  }
}

/** Every row of the store, each table sorted as the memory store sorts it. */
async function dumpRows(t: Tables, query: Query): Promise<StoreDump> {
  const all = (table: string) => `(SELECT coalesce(json_agg(doc), '[]')::text FROM ${table})`
  const { rows } = await query({
    text: `SELECT ${all(t.tenants)} AS tenants, ${all(t.applications)} AS applications,
      ${all(t.tokens)} AS tokens, ${all(t.associations)} AS associations,
      ${all(t.transactions)} AS transactions, ${all(t.stagedWrites)} AS staged,
      ${all(t.sessions)} AS sessions,
      ${all(t.formulas)} AS formulas, ${all(t.reactors)} AS reactors,
      ${all(t.idempotency)} AS idempotency,
      ${all(`${t.schema}.client_keys`)} AS client_keys,
      ${all(`${t.schema}.webhooks`)} AS webhooks, ${all(`${t.schema}.outbox`)} AS outbox,
      ${all(`${t.schema}.proxies`)} AS proxies,
      ${all(`${t.schema}.token_intents`)} AS token_intents,
      ${all(`${t.schema}.documents`)} AS documents,
      ${all(`${t.schema}.document_chunks`)} AS document_chunks`,
  })
  const row = rows[0] as Record<keyof StoreDump, string>
  const sorted = <T>(text: string, key: (t: T) => string) => (JSON.parse(text) as T[]).sort(byKey(key))
  return {
    tenants: sorted<Tenant>(row.tenants, (x) => x.id),
    applications: sorted<StoredApplication>(row.applications, (x) => k(x.tenant_id, x.id)),
    tokens: sorted<StoredToken>(row.tokens, (x) => k(x.tenant_id, x.id)),
    associations: sorted<Association>(
      row.associations,
      (x) => `${k(x.tenant_id, x.parent_id)}\u0000${x.child_id}`,
    ),
    transactions: sorted<StoredTransaction>(row.transactions, (x) => k(x.tenant_id, x.id)),
    staged: sorted<StagedWrite>(row.staged, (x) => `${k(x.tenant_id, x.transaction_id)}\u0000${x.token_id}`),
    sessions: sorted<StoredSession>(row.sessions, (x) => k(x.tenant_id, x.id)),
    formulas: sorted<StoredFormula>(row.formulas, (x) => k(x.tenant_id, x.id)),
    reactors: sorted<Reactor>(row.reactors, (x) => k(x.tenant_id, x.id)),
    idempotency: sorted<IdempotencyRecord>(row.idempotency, (x) => k(x.tenant_id, x.id)),
    webhooks: sorted<StoredWebhook>(row.webhooks, (x) => k(x.tenant_id, x.id)),
    outbox: sorted<OutboxEntry>(row.outbox, (x) => k(x.tenant_id, x.id)),
    client_keys: sorted<StoredClientKey>(row.client_keys, (x) => k(x.tenant_id, x.id)),
    proxies: sorted<StoredProxy>(row.proxies, (x) => k(x.tenant_id, x.id)),
    token_intents: sorted<StoredTokenIntent>(row.token_intents, (x) => k(x.tenant_id, x.id)),
    documents: sorted<StoredDocument>(row.documents, (x) => k(x.tenant_id, x.id)),
    document_chunks: sorted<StoredDocumentChunk>(
      row.document_chunks,
      (x) => `${k(x.tenant_id, x.document_id)}\u0000${String(x.index).padStart(10, '0')}`,
    ),
  }
}
