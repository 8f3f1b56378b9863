import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * One round trip per write: every `write` the service makes — create, update, delete, link, nonce
 * authorization, commit — is one statement on the pool (a prepared call of `tv_write`), never a
 * client checked out for BEGIN … COMMIT; a token create with its key cached is that one statement
 * and nothing else.
 */
describePostgres('postgres store round trips', (url) => {
  let pool: pg.Pool
  const schema = freshSchema()
  const issued: pg.QueryConfig[] = []
  let connects = 0
  beforeAll(() => {
    pool = testPool(url)
  })
  afterAll(async () => {
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('each write of create, update, delete, link, authorize and commit is one prepared statement', async () => {
    const recording = Object.create(pool) as pg.Pool
    recording.query = ((config: pg.QueryConfig) => {
      issued.push(config)
      return pool.query(config)
    }) as pg.Pool['query']
    recording.connect = (() => {
      connects++
      return pool.connect()
    }) as pg.Pool['connect']
    const service = createService({
      store: await postgresStore({ pool: recording, schema }),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: randomBytes(32),
      runner: null,
    })
    try {
      const tenant = await service.admin.createTenant({ name: 't' })
      const permissions = ['token:create', 'token:read', 'token:update', 'token:delete'] as const
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'private',
        permissions: [...permissions],
      })
      const { key: publicKey } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'pub',
        type: 'public',
        permissions: ['token:create'],
      })
      const client = service.connect(key)
      await client.tokens.create({ type: 'token', data: 'warm' })
      const writes = () => issued.filter((q) => q.text.includes('tv_write'))

      issued.length = 0
      connects = 0
      // A create of an id the service made, with no webhook: one prepared statement of the token,
      // its term, its count and its audit entry (no call of the write function).
      const token = await client.tokens.create({ type: 'token', data: 'a' })
      const inserts = issued.filter((q) => /\bINSERT INTO\b/.test(q.text) || q.text.includes('tv_write'))
      expect(writes()).toHaveLength(0)
      expect(inserts).toHaveLength(1)
      expect(inserts[0]!.name).toMatch(/^tv_/)
      expect(inserts[0]!.text).toMatch(/\.logs\b/)
      expect(issued.filter((q) => /^\s*(BEGIN|COMMIT)/i.test(q.text))).toEqual([])

      const steps: Array<[string, () => Promise<unknown>]> = [
        ['update', () => client.tokens.update(token.id, { data: 'b' })],
        [
          'link',
          async () => {
            const child = await client.tokens.create({ type: 'token', data: 'c' })
            issued.length = 0
            await client.tokens.children.link(token.id, child.id)
          },
        ],
        ['delete', () => client.tokens.delete(token.id)],
        [
          'authorize',
          async () => {
            const { nonce } = await service.connect(publicKey).sessions.create()
            issued.length = 0
            await client.sessions.authorize({ nonce, permissions: ['token:read'] })
          },
        ],
        [
          'commit',
          async () => {
            const tx = await client.transactions.create()
            await service.connect(key, { transactionId: tx.id }).tokens.create({ type: 'token', data: 'd' })
            issued.length = 0
            await client.transactions.commit(tx.id)
          },
        ],
      ]
      for (const [name, step] of steps) {
        issued.length = 0
        await step()
        expect(writes(), name).toHaveLength(1)
        expect(
          issued.filter((q) => /^\s*(BEGIN|COMMIT)/i.test(q.text)),
          name,
        ).toEqual([])
      }
      expect(connects).toBe(0)
    } finally {
      await service.close()
    }
  })
})
