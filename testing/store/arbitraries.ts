import fc from 'fast-check'
import type {
  IdempotencyRecord,
  Json,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
} from '../../src/kernel/index.js'
import type { Check, Op } from '../../src/store/index.js'

/** A write batch, or the expiry listing and the core's sweep at `now`. */
export type Step = { batch: { checks: Check[]; ops: Op[] } } | { purge: string }

// Random batches over a tiny universe of ids, so that batches collide: the same tokens, links,
// transactions, nonces and key hashes come up again and again, across two tenants.

/** The tenants of the universe. */
export const TENANTS = ['T', 'U'] as const
/** Every timestamp (creation, expiry, "now") the batches use: equal ones test the `<=` edges. */
export const TIMES = ['2030-01-01T00:00:00.000Z', '2030-01-01T01:00:00.000Z', '2030-01-01T02:00:00.000Z']
/** Application ids. */
const APPLICATION_IDS = ['a1', 'a2', 'a3']
/** Session ids. */
const SESSION_IDS = ['s1', 's2']
/**
 * Every key hash: each application and session (by tenant and id) has two of its own to choose
 * from, as SHA-256 hashes of random keys are never shared by two records; a record's hash changes
 * as it is put again, and an application may hold several.
 */
export const KEY_HASHES = TENANTS.flatMap((t) =>
  [...APPLICATION_IDS, ...SESSION_IDS].flatMap((id) => [`${t}.${id}.k1`, `${t}.${id}.k2`]),
)
/** Every nonce hash: two per session id (nonces are looked up within a tenant). */
export const NONCES = SESSION_IDS.flatMap((id) => [`${id}.n1`, `${id}.n2`])
/** Token ids. */
export const TOKEN_IDS = ['a', 'b', 'c']
/** Formula names with `LIKE` metacharacters, case folding that changes length, and UTF-16 ordering traps. */
export const FORMULA_NAMES = [
  'Card Lookup',
  'card enrich',
  '100%_done',
  'a\\b',
  'İstanbul',
  '😀 emoji',
  '\uff01bang',
  'x',
]

const tenant = fc.constantFrom('T', 'T', 'T', 'U')
const time = fc.constantFrom(...TIMES)
const tokenId = fc.constantFrom(...TOKEN_IDS)
const txId = fc.constantFrom('t1', 't2')
// Records are JSON: values pass through JSON text (so -0 becomes 0, as any store's round trip makes it).
const json = fc
  .jsonValue({ maxDepth: 2, stringUnit: 'grapheme' })
  .filter((v) => !JSON.stringify(v).includes('\\u0000'))
  .map((v) => JSON.parse(JSON.stringify(v)) as Json)

const token: fc.Arbitrary<StoredToken> = fc.record(
  {
    id: tokenId,
    tenant_id: tenant,
    type: fc.constantFrom('x', 'y'),
    data: json,
    containers: fc.constant(['/general/high/']),
    metadata: fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
    mask: json,
    expires_at: time,
    created_by: fc.constant('app'),
    created_at: time,
  },
  { requiredKeys: ['id', 'tenant_id', 'type', 'data', 'containers', 'metadata', 'created_by', 'created_at'] },
)

const simpleOp: fc.Arbitrary<Op> = fc.oneof(
  token.map((t): Op => ({ op: 'token.put', token: t })),
  token.map((t): Op => ({ op: 'token.put', token: t })),
  fc.record({ tenant_id: tenant, id: tokenId }).map((r): Op => ({ op: 'token.delete', ...r })),
  ...Array.from({ length: 2 }, () =>
    fc
      .record({ tenant_id: tenant, parent_id: tokenId, child_id: tokenId, created_at: time })
      .map((association): Op => ({ op: 'association.put', association })),
  ),
  fc
    .record({ tenant_id: tenant, parent_id: tokenId, child_id: tokenId })
    .map((r): Op => ({ op: 'association.delete', ...r })),
)

const transaction: fc.Arbitrary<StoredTransaction> = fc.record({
  id: txId,
  tenant_id: tenant,
  created_at: time,
  created_by: fc.constant('app'),
  expires_at: time,
  state: fc.constantFrom('open', 'open', 'committed', 'rolled_back', 'expired'),
  version: fc.integer({ min: 0, max: 3 }),
})

const stagedWrite = fc.record(
  {
    tenant_id: tenant,
    transaction_id: txId,
    token_id: tokenId,
    seq: fc.integer({ min: 1, max: 3 }),
    token: fc.option(token, { nil: null }),
    creates: fc.constant(true as const),
  },
  { requiredKeys: ['tenant_id', 'transaction_id', 'token_id', 'seq', 'token'] },
)

const session: fc.Arbitrary<StoredSession> = fc
  .record({
    id: fc.constantFrom(...SESSION_IDS),
    tenant_id: tenant,
    application_id: fc.constant('pub'),
    key_hash: fc.constantFrom('k1', 'k2'),
    nonce_hash: fc.constantFrom('n1', 'n2'),
    state: fc.constantFrom('created', 'authorized'),
    permissions: fc.constant([]),
    created_at: time,
    expires_at: time,
  })
  .map(
    (s): StoredSession => ({
      ...s,
      permissions: [],
      key_hash: `${s.tenant_id}.${s.id}.${s.key_hash}`,
      nonce_hash: `${s.id}.${s.nonce_hash}`,
    }),
  )

const singleKeyApplication: fc.Arbitrary<StoredApplication> = fc
  .record(
    {
      id: fc.constantFrom(...APPLICATION_IDS),
      tenant_id: tenant,
      name: fc.constant('app'),
      type: fc.constant('private'),
      permissions: fc.constant(['token:read']),
      created_at: time,
      key_hash: fc.constantFrom('k1', 'k2'),
      expires_at: time,
    },
    { requiredKeys: ['id', 'tenant_id', 'name', 'type', 'permissions', 'created_at', 'key_hash'] },
  )
  .map(
    (a): StoredApplication => ({
      ...a,
      permissions: ['token:read'],
      key_hash: `${a.tenant_id}.${a.id}.${a.key_hash}`,
    }),
  )

/** Applications holding several keys (or none), beside those of one `key_hash`. */
const application: fc.Arbitrary<StoredApplication> = fc.oneof(
  singleKeyApplication,
  fc
    .tuple(singleKeyApplication, fc.uniqueArray(fc.constantFrom('k1', 'k2'), { maxLength: 2 }))
    .map(([{ key_hash: _one, ...a }, hashes]) => ({
      ...a,
      keys: hashes.map((key, i) => ({
        id: `key-${i}`,
        key_hash: `${a.tenant_id}.${a.id}.${key}`,
        created_at: a.created_at,
      })),
    })),
)

/** Idempotency record ids. */
export const IDEMPOTENCY_IDS = ['i1', 'i2']

const idempotencyRecord: fc.Arbitrary<IdempotencyRecord> = fc.record(
  {
    tenant_id: tenant,
    id: fc.constantFrom(...IDEMPOTENCY_IDS),
    state: fc.constantFrom('pending', 'done'),
    claim: fc.constantFrom('c1', 'c2'),
    request: fc.constant('r'),
    answer: fc.constant('{"id":"x"}'),
    created_at: time,
    lease_until: time,
    expires_at: time,
  },
  {
    requiredKeys: ['tenant_id', 'id', 'state', 'claim', 'request', 'created_at', 'lease_until', 'expires_at'],
  },
)

const formula: fc.Arbitrary<StoredFormula> = fc.record({
  id: fc.constantFrom('f1', 'f2', 'f3'),
  tenant_id: fc.constantFrom<string | null>('T', 'U', null),
  name: fc.constantFrom(...FORMULA_NAMES),
  type: fc.constant('private'),
  status: fc.constant('verified'),
  code: fc.constant(''),
  configuration: fc.constant([]),
  request_parameters: fc.constant([]),
})

const op: fc.Arbitrary<Op> = fc.oneof(
  simpleOp,
  simpleOp,
  simpleOp,
  transaction.map((t): Op => ({ op: 'transaction.put', transaction: t })),
  fc.record({ tenant_id: tenant, id: txId }).map((r): Op => ({ op: 'transaction.delete', ...r })),
  fc
    .record({ tenant_id: tenant, token_id: tokenId, transaction_id: txId, expires_at: time })
    .map((lock): Op => ({ op: 'lock.put', lock })),
  fc.record({ tenant_id: tenant, token_id: tokenId }).map((r): Op => ({ op: 'lock.delete', ...r })),
  stagedWrite.map((staged): Op => ({ op: 'staged.put', staged })),
  fc
    .record({ tenant_id: tenant, transaction_id: txId, token_id: tokenId })
    .map((r): Op => ({ op: 'staged.delete', ...r })),
  session.map((s): Op => ({ op: 'session.put', session: s })),
  fc
    .record({ tenant_id: tenant, id: fc.constantFrom('s1', 's2') })
    .map((r): Op => ({ op: 'session.delete', ...r })),
  application.map((a): Op => ({ op: 'application.put', application: a })),
  fc
    .record({ tenant_id: tenant, id: fc.constantFrom('a1', 'a2') })
    .map((r): Op => ({ op: 'application.delete', ...r })),
  formula.map((f): Op => ({ op: 'formula.put', formula: f })),
  formula.map((f): Op => ({ op: 'formula.put', formula: f })),
  fc
    .record({ tenant_id: fc.constantFrom<string | null>('T', null), id: fc.constantFrom('f1', 'f2') })
    .map((r): Op => ({ op: 'formula.delete', ...r })),
  fc
    .record({
      id: fc.constantFrom('r1', 'r2'),
      tenant_id: tenant,
      formula_id: fc.constantFrom('f1', 'f2'),
      created_at: time,
    })
    .map(
      (r): Op => ({
        op: 'reactor.put',
        reactor: { ...r, name: r.id, configuration: { a: 1 }, created_by: 'app' },
      }),
    ),
  // Reactors with inline code: no formula, named like the formulas (for the name filter).
  fc
    .record({
      id: fc.constantFrom('r1', 'r2', 'r3'),
      tenant_id: tenant,
      name: fc.constantFrom(...FORMULA_NAMES),
      created_at: time,
    })
    .map(
      (r): Op => ({
        op: 'reactor.put',
        reactor: { ...r, code: 'x', configuration: {}, created_by: 'app' },
      }),
    ),
  idempotencyRecord.map((record): Op => ({ op: 'idempotency.put', record })),
  fc
    .record({ tenant_id: tenant, id: fc.constantFrom(...IDEMPOTENCY_IDS) })
    .map((r): Op => ({ op: 'idempotency.delete', ...r })),
  fc
    .record({ tenant_id: tenant, id: fc.constantFrom('r1', 'r2') })
    .map((r): Op => ({ op: 'reactor.delete', ...r })),
  ...Array.from({ length: 2 }, () =>
    fc
      .record({
        formula_id: fc.constantFrom('f1', 'f2'),
        tenant_id: tenant,
        reactor_id: fc.constantFrom('r1', 'r2'),
      })
      .map((use): Op => ({ op: 'formula_use.put', use })),
  ),
  fc
    .record({
      formula_id: fc.constantFrom('f1', 'f2'),
      tenant_id: tenant,
      reactor_id: fc.constantFrom('r1', 'r2'),
    })
    .map((r): Op => ({ op: 'formula_use.delete', ...r })),
  tenant.map((id): Op => ({ op: 'tenant.put', tenant: { id, name: id, created_at: TIMES[0]! } })),
)

/** Every kind of check, over the same universe. */
export const check: fc.Arbitrary<Check> = fc.oneof(
  fc.record({ check: fc.constantFrom('token.absent', 'token.present'), tenant_id: tenant, id: tokenId }),
  fc.record(
    { check: fc.constant('token.unlocked'), tenant_id: tenant, id: tokenId, now: time, except: txId },
    { requiredKeys: ['check', 'tenant_id', 'id', 'now'] },
  ),
  fc.record({ check: fc.constant('lock.held'), tenant_id: tenant, token_id: tokenId, transaction_id: txId }),
  fc.record({
    check: fc.constantFrom('association.absent', 'association.present'),
    tenant_id: tenant,
    parent_id: tokenId,
    child_id: tokenId,
  }),
  session.map((s): Check => ({ check: 'session.unchanged', tenant_id: s.tenant_id, id: s.id, session: s })),
  fc.record({ check: fc.constant('formula.present'), tenant_id: tenant, id: fc.constantFrom('f1', 'f2') }),
  fc.record({ check: fc.constant('formula.unused'), id: fc.constantFrom('f1', 'f2') }),
  fc
    .record({
      id: fc.constantFrom('r1', 'r2'),
      tenant_id: tenant,
      formula_id: fc.constantFrom('f1', 'f2'),
      created_at: time,
    })
    .map(
      (r): Check => ({
        check: 'reactor.unchanged',
        tenant_id: r.tenant_id,
        id: r.id,
        reactor: { ...r, name: r.id, configuration: { a: 1 }, created_by: 'app' },
      }),
    ),
  fc.record({
    check: fc.constantFrom('application.present', 'reactor.present'),
    tenant_id: tenant,
    id: fc.constantFrom('a1', 'r1'),
  }),
  application.map(
    (a): Check => ({ check: 'application.unchanged', tenant_id: a.tenant_id, id: a.id, application: a }),
  ),
  fc.record({
    check: fc.constant('idempotency.absent'),
    tenant_id: tenant,
    id: fc.constantFrom(...IDEMPOTENCY_IDS),
  }),
  fc.record({
    check: fc.constant('idempotency.claimed'),
    tenant_id: tenant,
    id: fc.constantFrom(...IDEMPOTENCY_IDS),
    claim: fc.constantFrom('c1', 'c2'),
  }),
) as fc.Arbitrary<Check>

/** A write batch; now and then the expiry listing and the sweep instead. */
export const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record({ checks: fc.array(check, { maxLength: 2 }), ops: fc.array(op, { maxLength: 6 }) })
      .map((batch) => ({ batch })),
  },
  { weight: 1, arbitrary: time.map((purge) => ({ purge })) },
)

/** A name filter made of characters that matter to `LIKE` and to case folding. */
export const nameFilter = fc.string({
  unit: fc.constantFrom('a', 'C', 'i', '*', '%', '_', '\\', 'İ', '😀', '\uff01', '.', ' ', 'x'),
  maxLength: 4,
})
