import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { sharedReads } from '../../adapters/postgres/outbox.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * Each token write reads its tenant's webhooks to derive its events. On PostgreSQL one read of a
 * tenant is under way at a time, and the asks that come meanwhile share the next, sent after the
 * last of them (`sharedReads` in adapters/postgres/outbox.ts): as exact as a query each, a round trip
 * for many.
 */
describe('sharedReads', () => {
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('makes one read of the asks of a quiet turn, sent after the last of them', async () => {
    let version = 0
    const sentAt: number[] = []
    const read = sharedReads(async (tenant: string) => {
      sentAt.push(version)
      return [`${tenant}@${version}`]
    })
    const first = read('t')
    version = 1 // a write acknowledged after the first ask: the shared read must see it
    const second = read('t')
    const other = read('u')
    expect(await Promise.all([first, second, other])).toEqual([['t@1'], ['t@1'], ['u@1']])
    expect(sentAt).toEqual([1, 1])
  })

  it('the asks that come while a read is under way share the next, sent once it returned', async () => {
    let reads = 0
    let release = () => {}
    const read = sharedReads(async () => {
      reads++
      if (reads === 1) await new Promise<void>((resolve) => (release = resolve))
      return [reads]
    })
    const first = read('t')
    await turn()
    const [a, b] = [read('t'), read('t')]
    await turn()
    await turn()
    expect(reads).toBe(1)
    release()
    expect(await Promise.all([first, a, b])).toEqual([[1], [2], [2]])
    expect(reads).toBe(2)
  })

  it('an ask after the read was sent waits for a read of its own; a failed read fails its asks only', async () => {
    let reads = 0
    let fail = true
    const read = sharedReads(async () => {
      reads++
      if (fail) throw new Error('unreachable')
      return [reads]
    })
    const failed = read('t')
    const refused = expect(failed).rejects.toThrow('unreachable')
    await turn()
    fail = false
    const later = read('t')
    await refused
    expect(await later).toEqual([2])
    expect(reads).toBe(2)
  })
})

describePostgres('webhook reads on PostgreSQL', (url) => {
  let pool: pg.Pool
  const schema = freshSchema()
  beforeAll(() => {
    pool = testPool(url)
  })
  afterAll(async () => {
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('64 creates in flight share their webhook reads, one under way at a time, and each has its delivery', async () => {
    let reads = 0
    let under = 0
    let most = 0
    const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<unknown>
    ;(pool as unknown as { query: unknown }).query = (config: pg.QueryConfig) => {
      if (!/FROM \S+\.webhooks WHERE tenant_id/.test(config.text ?? '')) return query(config)
      reads++
      most = Math.max(most, ++under)
      return query(config).finally(() => under--)
    }
    const service = createService({
      store: await postgresStore({ pool, schema }),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: randomBytes(32),
      runner: null,
      egress: ['https://hooks.example.test'],
      webhookDelivery: 'manual',
    })
    const tenant = await service.admin.createTenant({ name: 't' })
    const app = async (type: 'management' | 'private', permissions: ('webhook:create' | 'token:create')[]) =>
      service.connect(
        (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key,
      )
    const management = await app('management', ['webhook:create'])
    const writer = await app('private', ['token:create'])
    await writer.tokens.create({ type: 'token', data: 'warm' })
    await management.webhooks.create({
      name: 'h',
      url: 'https://hooks.example.test/in',
      events: ['token.created'],
    })
    reads = 0
    most = 0
    await Promise.all(
      Array.from({ length: 64 }, (_, i) => writer.tokens.create({ type: 'token', data: `v${i}` })),
    )
    // A query each before: 64, up to the pool's 10 at once.
    expect(most).toBe(1)
    expect(reads).toBeLessThanOrEqual(32)
    const deliveries = await service.admin.webhooks.deliveries(tenant.id)
    expect(deliveries.filter((d) => d.event_type === 'token.created')).toHaveLength(64)
    await service.close()
  })
})
