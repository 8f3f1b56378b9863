import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const NOW = '2030-01-01T00:00:00.000Z'
const TENANTS = 50
const PER_TENANT = 60

/** Every kind of record for item `i` of a tenant; tokens `k1`… are children of `k0`. */
function records(tenant_id: string, i: number): Op[] {
  const base = { tenant_id, created_at: NOW, created_by: 'a' }
  const ops: Op[] = [
    {
      op: 'token.put',
      token: {
        ...base,
        id: `k${i}`,
        type: i % 2 ? 'odd' : 'even',
        data: i,
        // A container, as every token the service writes has: its term row keeps `token_terms` from
        // being empty, where a scan of its no pages is what a planner picks.
        containers: ['/general/'],
        metadata: {},
        fingerprint: `fp-${i}`,
      },
    },
    {
      op: 'formula.put',
      formula: {
        ...base,
        id: `f${i}`,
        name: `Formula ${i}`,
        type: 'private',
        status: 'verified',
        code: '',
        configuration: [],
        request_parameters: [],
      },
    },
    {
      op: 'session.put',
      session: {
        ...base,
        id: `s${i}`,
        application_id: 'p',
        key_hash: `key-${tenant_id}-${i}`,
        nonce_hash: `n${i}`,
        state: 'created',
        permissions: [],
        expires_at: NOW,
      },
    },
    {
      op: 'application.put',
      application: {
        ...base,
        id: `a${i}`,
        name: 'a',
        type: 'private',
        permissions: [],
        key_hash: `app-${tenant_id}-${i}`,
        ...(i % 20 === 0 ? { expires_at: NOW } : {}),
      },
    },
    {
      op: 'transaction.put',
      transaction: { ...base, id: `x${i}`, expires_at: NOW, state: 'open', version: 1 },
    },
    {
      op: 'staged.put',
      staged: { tenant_id, transaction_id: `x${i}`, token_id: `k${i}`, seq: 1, token: null },
    },
    {
      op: 'lock.put',
      lock: { tenant_id, token_id: `k${i}`, transaction_id: `x${i}`, expires_at: NOW },
    },
  ]
  if (i > 0)
    ops.push({
      op: 'association.put',
      association: { tenant_id, parent_id: 'k0', child_id: `k${i}`, created_at: NOW },
    })
  return ops
}

/** The scan nodes of a JSON plan, as `Node Type on relation`. */
function scans(plan: unknown, out: string[] = []): string[] {
  if (plan && typeof plan === 'object') {
    const node = plan as Record<string, unknown>
    if (typeof node['Node Type'] === 'string' && typeof node['Relation Name'] === 'string') {
      out.push(`${node['Node Type']} on ${node['Relation Name']}`)
    }
    for (const value of Object.values(node)) scans(value, out)
  }
  return out
}

/** The index names of a JSON plan's scan nodes ('' for a scan that names none). */
function indexes(plan: unknown, out: string[] = []): string[] {
  if (plan && typeof plan === 'object') {
    const node = plan as Record<string, unknown>
    if (typeof node['Relation Name'] === 'string') out.push(String(node['Index Name'] ?? ''))
    for (const value of Object.values(node)) indexes(value, out)
  }
  return out
}

describePostgres('postgres store queries use indexes', (url) => {
  let pool: pg.Pool
  let store: Store
  const issued: pg.QueryConfig[] = []
  const schema = freshSchema()

  beforeAll(async () => {
    pool = testPool(url)
    // The store's reads go through `pool.query`: record what it sends.
    const recording = Object.create(pool) as pg.Pool
    recording.query = ((config: pg.QueryConfig) => {
      issued.push(config)
      return pool.query(config)
    }) as pg.Pool['query']
    store = await postgresStore({ pool: recording, schema })
    for (let t = 0; t < TENANTS; t++) {
      await store.write({ ops: Array.from({ length: PER_TENANT }, (_, i) => records(`t${t}`, i)).flat() })
    }
    await pool.query(`ANALYZE`)
  }, 60_000)
  afterAll(async () => {
    await store?.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('reads by key, lists children and searches names without scanning a table', async () => {
    issued.length = 0
    await store.getToken('t7', 'k3')
    await store.listChildren('t7', 'k0', { offset: 10, limit: 5, now: NOW })
    await store.listChildren('t7', 'k0', { offset: 0, limit: 5, now: NOW, ids: ['k3', 'k4'], types: ['odd'] })
    await store.listFormulas('t7', { offset: 0, limit: 5, name: 'formula 1*' })
    await store.listFormulas('t7', { offset: 0, limit: 5, name: '1' })
    await store.getFormula('t7', 'f3')
    await store.findKey('key-t7-3')
    await store.findKey('app-t7-3')
    await store.listApplications('t7', { offset: 5, limit: 5 })
    await store.listApplications('t7', { offset: 0, limit: 5, ids: ['a3', 'a9'] })
    await store.listExpired({ kind: 'application', before: NOW, limit: 10 })
    await store.listExpired({ kind: 'token.cvc', before: NOW, limit: 10 })
    const s3 = await store.getSessionByNonce('t7', 'n3')
    await store.write({
      checks: [{ check: 'session.unchanged', tenant_id: 't7', id: 's3', session: s3! }],
      ops: [],
    })
    await store.write({ checks: [{ check: 'token.unlocked', tenant_id: 't7', id: 'k1', now: NOW }], ops: [] })
    await store.write({
      checks: [{ check: 'token.fingerprint_absent', tenant_id: 't7', fingerprint: 'fp-3', now: NOW }],
      ops: [],
    })
    expect(issued.length).toBe(16)
    const client = await pool.connect()
    try {
      // Plans for the values at hand, as the first executions of a prepared statement get.
      await client.query('SET plan_cache_mode = force_custom_plan')
      for (const config of issued) {
        const { rows } = await client.query({
          text: `EXPLAIN (FORMAT JSON) ${config.text}`,
          values: config.values ?? [],
        })
        const found = scans(rows[0]['QUERY PLAN'])
        expect(
          found.filter((s) => s.startsWith('Seq Scan')),
          config.text,
        ).toEqual([])
      }
    } finally {
      client.release()
    }
  })

  it("counts a tenant's unexpired tokens from its kept count and the (tenant_id, expires_at) index, and reads staged records by key", async () => {
    await pool.query(`VACUUM ANALYZE ${schema}.tokens`)
    await pool.query(`ANALYZE ${schema}.token_counts`)
    issued.length = 0
    expect((await store.listTokens('t7', { offset: 0, limit: 0, now: NOW })).total).toBe(PER_TENANT)
    expect((await store.listStaged('t7', 'x3', { limit: 10 })).map((w) => w.token_id)).toEqual(['k3'])
    expect((await store.listStaged('t7', 'x3', { after: 'k3', limit: 10 })).length).toBe(0)
    expect((await store.getStaged('t7', 'x3', ['k3', 'k4'])).map((w) => w.token_id)).toEqual(['k3'])
    expect(issued.length).toBe(4)
    const client = await pool.connect()
    try {
      await client.query('SET plan_cache_mode = force_custom_plan')
      const explain = async (config: pg.QueryConfig) =>
        (await client.query({ text: `EXPLAIN (FORMAT JSON) ${config.text}`, values: config.values ?? [] }))
          .rows[0]['QUERY PLAN']
      // The staged reads: a range of the primary key.
      for (const config of issued.slice(1))
        expect(scans(await explain(config))).toEqual(['Index Scan on staged_writes'])
      // The count reads the tenant's count rows and its expired tokens' index entries, no doc and no
      // other token: with sequential scans off (this test's tables are small enough for one to win),
      // both come from an index.
      await client.query('SET enable_seqscan = off')
      const plan = await explain(issued[0]!)
      expect(indexes(plan)).not.toContain('')
      expect(indexes(plan)).toContain('token_counts_pkey')
      expect(indexes(plan)).toContain('tokens_by_tenant_expiry')
      expect(scans(plan)).toContain('Index Only Scan on tokens')
    } finally {
      client.release()
    }
  })

  it('writes (create, deduplicating create, update, link, delete, authorize, commit) scan no table', async () => {
    // One connection, so the statistics this backend flushes count every write it ran.
    const one = testPool(url, 1)
    const writer = await postgresStore({ pool: one, schema })
    const seqScans = async () => {
      await one.query('SELECT pg_stat_force_next_flush()')
      const { rows } = await one.query(
        `SELECT coalesce(sum(seq_scan), 0)::int AS n FROM pg_stat_user_tables WHERE schemaname = $1`,
        [schema],
      )
      return rows[0].n as number
    }
    try {
      const before = await seqScans()
      const T = 't9'
      const tok = (id: string) => ({
        tenant_id: T,
        id,
        type: 'odd',
        data: id,
        containers: [],
        metadata: {},
        fingerprint: `fp-${id}`,
        created_at: NOW,
        created_by: 'a',
      })
      // Past the five custom plans of each statement inside tv_write, so its generic plans run too.
      for (let round = 0; round < 8; round++) {
        const id = `new-${round}`
        const results = [
          await writer.write({
            checks: [
              { check: 'token.absent', tenant_id: T, id },
              { check: 'token.unlocked', tenant_id: T, id, now: NOW },
            ],
            ops: [{ op: 'token.put', token: tok(id) }],
          }),
          await writer.write({
            checks: [
              { check: 'token.fingerprint_absent', tenant_id: T, fingerprint: `fp-dedup-${round}`, now: NOW },
            ],
            ops: [{ op: 'token.put', token: { ...tok(`dedup-${round}`), fingerprint: `fp-dedup-${round}` } }],
          }),
          await writer.write({
            checks: [{ check: 'token.unchanged', tenant_id: T, id, token: tok(id) }],
            ops: [{ op: 'token.put', token: { ...tok(id), data: 'changed' } }],
          }),
          await writer.write({
            checks: [
              { check: 'token.present', tenant_id: T, id: 'k0' },
              { check: 'token.present', tenant_id: T, id },
              { check: 'association.absent', tenant_id: T, parent_id: 'k0', child_id: id },
            ],
            ops: [
              {
                op: 'association.put',
                association: { tenant_id: T, parent_id: 'k0', child_id: id, created_at: NOW },
              },
            ],
          }),
          await writer.write({
            checks: [
              { check: 'token.present', tenant_id: T, id },
              {
                check: 'links.within',
                tenant_id: T,
                token_id: id,
                links: [{ parent_id: 'k0', child_id: id }],
              },
              { check: 'token.unlocked', tenant_id: T, id, now: NOW },
            ],
            ops: [
              { op: 'token.delete', tenant_id: T, id },
              { op: 'association.delete', tenant_id: T, parent_id: 'k0', child_id: id },
            ],
          }),
        ]
        const session = (await writer.getSessionByNonce(T, `n${round}`))!
        results.push(
          await writer.write({
            checks: [{ check: 'session.unchanged', tenant_id: T, id: session.id, session }],
            ops: [{ op: 'session.put', session: { ...session, state: 'authorized' } }],
          }),
        )
        const tx = (await writer.getTransaction(T, `x${round}`))!
        results.push(
          await writer.write({
            checks: [
              { check: 'transaction.unchanged', tenant_id: T, id: tx.id, transaction: tx },
              { check: 'lock.held', tenant_id: T, token_id: `k${round}`, transaction_id: tx.id },
            ],
            ops: [
              { op: 'lock.delete', tenant_id: T, token_id: `k${round}` },
              { op: 'transaction.put', transaction: { ...tx, state: 'committed' } },
              { op: 'staged.delete', tenant_id: T, transaction_id: tx.id, token_id: `k${round}` },
            ],
          }),
        )
        expect(results.every((r) => r.ok)).toBe(true)
      }
      expect(await seqScans()).toBe(before)
    } finally {
      await writer.close()
      await one.end()
    }
  })
})
