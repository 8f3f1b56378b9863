import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock, ServiceError } from '../../entry/index.js'
import type { Op } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/** An object of `n` plain values: tokenize makes one token of each (at most 100 a call). */
const values = (n: number, from: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`v${from + i}`, `value ${from + i}`]))

/**
 * A transaction's bound on PostgreSQL (1000 staged writes): the bound commits, one past is refused
 * with 400 before anything is staged, and transactions at the bound commit under the server's
 * default lock table while other tenants commit and create at once. The table (64 locks per
 * connection slot, and the spare shared memory: about 12 700 advisory locks on PostgreSQL 15 with
 * its defaults) held four commits at the bound when a commit took three locks per staged token
 * (its token, its lock record, its fingerprint); it takes two now, so five commit at once.
 */
/** A client of a new tenant of `service` that creates and reads tokens. */
async function tenant2(service: Awaited<ReturnType<typeof createService>>) {
  const { id } = await service.admin.createTenant({ name: 'bystander' })
  const { key } = await service.admin.createApplication({
    tenantId: id,
    name: 'p',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  return service.connect(key)
}

describePostgres('transaction bounds on PostgreSQL', (url) => {
  let pool: pg.Pool
  const schema = freshSchema()
  beforeAll(() => {
    pool = testPool(url, 10)
  })
  afterAll(async () => {
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  const vault = async () => {
    const service = await createService({
      store: await postgresStore({ pool, schema }),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: randomBytes(32),
      runner: null,
    })
    const tenant = async (name: string) => {
      const { id } = await service.admin.createTenant({ name })
      const { key } = await service.admin.createApplication({
        tenantId: id,
        name: 'p',
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
      return { key, client: service.connect(key) }
    }
    return { service, tenant }
  }

  /** Opens a transaction of `key` and stages 1000 token creates in it (ten tokenize calls). */
  const atTheBound = async (service: Awaited<ReturnType<typeof vault>>['service'], key: string) => {
    const tx = await service.connect(key).transactions.create()
    const inTx = service.connect(key, { transactionId: tx.id })
    for (let i = 0; i < 10; i++) await inTx.tokens.tokenize(values(100, i * 100))
    return { tx, inTx }
  }

  it('1000 staged writes commit; the 1001st answers 400 naming 1000 and stages nothing', async () => {
    const { service, tenant } = await vault()
    try {
      const { key, client } = await tenant('a')
      const { tx, inTx } = await atTheBound(service, key)
      const staged = async () =>
        (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".staged_writes`)).rows[0].n as number
      expect(await staged()).toBe(1000)
      const refused = await inTx.tokens
        .create({ type: 'token', data: 'one too many' })
        .catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(ServiceError)
      expect((refused as ServiceError).code).toBe('validation_failed')
      expect((refused as ServiceError).message).toContain('1000')
      expect(await staged()).toBe(1000)
      await client.transactions.commit(tx.id)
      expect((await client.tokens.list({ size: 1 })).pagination.total_items).toBe(1000)
      expect(await staged()).toBe(0)
    } finally {
      await service.close()
    }
  })

  it('a commit at the bound takes one advisory lock per staged token and one per fingerprint: 2 001, not 3 001', async () => {
    const { service, tenant } = await vault()
    const keys: number[] = []
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown
    ;(pool as unknown as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
      const c = config as { text?: string; values?: unknown[] } | undefined
      if (c?.text?.includes('.tv_write(') && Array.isArray(c.values?.[2])) keys.push(c.values[2].length)
      return query(config, ...rest)
    }
    try {
      const { key, client } = await tenant('h')
      const { tx } = await atTheBound(service, key)
      keys.length = 0
      await client.transactions.commit(tx.id)
      // Its tokens (each fingerprinted) and the transaction; the tokens' lock records share their names.
      // (A write of one lock may come first: the tenant's record, reserving seals of its data key.)
      expect(keys.at(-1)).toBe(2001)
      expect(keys.slice(0, -1).every((n) => n === 1)).toBe(true)
    } finally {
      ;(pool as unknown as { query: unknown }).query = query
      await service.close()
    }
  })

  it("a transaction of 10 000 staged writes stored before the bounds expires by the sweep, and another tenant's expired token still goes", async () => {
    const store = await postgresStore({ pool, schema })
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = await createService({ store, clock, masterKey: randomBytes(32), runner: null })
    try {
      const { id: tenantId } = await service.admin.createTenant({ name: 'legacy' })
      const { key } = await service.admin.createApplication({
        tenantId,
        name: 'p',
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
      const tx = await service.connect(key).transactions.create()
      let stored = (await store.getTransaction(tenantId, tx.id))!
      // As a version without bounds staged it: 10 000 staged deletes with their locks, 1000 a write.
      for (let from = 0; from < 10_000; from += 1000) {
        const next = { ...stored, version: stored.version + 1 }
        const ops: Op[] = [{ op: 'transaction.put', transaction: next }]
        for (let i = from; i < from + 1000; i++) {
          const id = `t${String(i).padStart(5, '0')}`
          ops.push(
            {
              op: 'staged.put',
              staged: {
                tenant_id: tenantId,
                transaction_id: tx.id,
                token_id: id,
                seq: next.version,
                token: null,
              },
            },
            {
              op: 'lock.put',
              lock: {
                tenant_id: tenantId,
                token_id: id,
                transaction_id: tx.id,
                expires_at: stored.expires_at,
              },
            },
          )
        }
        expect((await store.write({ ops })).ok).toBe(true)
        stored = next
      }
      const refused = await service
        .connect(key)
        .transactions.commit(tx.id)
        .catch((e: unknown) => e)
      expect((refused as ServiceError).code).toBe('validation_failed')
      const other = await tenant2(service)
      const soon = new Date(clock.now().getTime() + 60_000).toISOString()
      const expiring = await other.tokens.create({ type: 'token', data: 'gone soon', expires_at: soon })
      clock.advance(60 * 60_000)
      const swept = await service.admin.sweep()
      expect(swept.failures).toBeUndefined()
      expect(swept.transactions).toBe(1)
      expect(swept.tokens).toBe(1)
      expect((await other.tokens.get(expiring.id).catch((e: unknown) => e)) as ServiceError).toMatchObject({
        code: 'not_found',
      })
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".staged_writes`)
      expect(rows[0].n).toBe(0)
      expect((await store.getTransaction(tenantId, tx.id))?.state).toBe('expired')
    } finally {
      await service.close()
    }
  })

  it("five tenants' transactions at the bound commit at once without running out of shared memory; a fourth tenant's creates meanwhile succeed", async () => {
    const { service, tenant } = await vault()
    try {
      const tenants = await Promise.all(['b', 'c', 'd', 'f', 'g'].map(tenant))
      const open = await Promise.all(tenants.map((t) => atTheBound(service, t.key)))
      const bystander = await tenant('e')
      const [commits, creates] = await Promise.all([
        Promise.allSettled(tenants.map((t, i) => t.client.transactions.commit(open[i]!.tx.id))),
        Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => bystander.client.tokens.create({ type: 'token', data: i })),
        ),
      ])
      expect(commits.filter((c) => c.status === 'rejected').map((c) => String(c.reason))).toEqual([])
      expect(creates.filter((c) => c.status === 'rejected').map((c) => String(c.reason))).toEqual([])
      for (const t of tenants)
        expect((await t.client.tokens.list({ size: 1 })).pagination.total_items).toBe(1000)
    } finally {
      await service.close()
    }
  })
})
