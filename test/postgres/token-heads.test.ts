import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { storedBytes } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * A token row keeps its head and its stored bytes in columns of their own (migration 19), so a
 * page or a search reads whole only the tokens it answers: a large token's document is kept out
 * of line (TOAST) and read whole by any look inside it.
 */
describePostgres('postgres token heads and stored bytes', (url) => {
  let pool: pg.Pool
  const schemas: string[] = []
  beforeAll(() => {
    // One connection: the statistics a test reads are those of the session that ran the page.
    pool = testPool(url, 1)
  })
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  async function vault() {
    const schema = freshSchema()
    schemas.push(schema)
    const store = await postgresStore({ pool, schema })
    const service = createService({
      store,
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: randomBytes(32),
      runner: null,
    })
    const tenant = await service.admin.createTenant({ name: 't' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:update', 'token:search'],
    })
    return { schema, store, service, tenantId: tenant.id, client: service.connect(key) }
  }

  /** What each token's row keeps, against what the core makes of its document. */
  async function expectColumnsOf(v: Awaited<ReturnType<typeof vault>>, ids: string[]) {
    const docs = await v.store.getTokens(v.tenantId, ids)
    const heads = await v.store.getTokenHeads(v.tenantId, ids)
    expect(heads).toHaveLength(ids.length)
    for (const [i, doc] of docs.entries()) {
      const { data: _data, mask: _mask, ...rest } = doc as typeof doc & { mask?: unknown }
      expect(heads[i]).toEqual({ ...rest, stored_bytes: storedBytes(doc) })
    }
  }

  it('keeps each token head and stored bytes as the core measures them, as written and as migrated', async () => {
    const v = await vault()
    const made = await Promise.all([
      v.client.tokens.create({ type: 'token', data: 'a' }),
      v.client.tokens.create({ type: 'token', data: { nested: ['é', 1, null] }, metadata: { k: 'v' } }),
      v.client.tokens.create({ type: 'card_number', data: '4242424242424242' }),
      v.client.tokens.create({ type: 'token', data: 'x'.repeat(5000), search_indexes: ['{{ data }}'] }),
    ])
    const ids = made.map((t) => t.id)
    await expectColumnsOf(v, ids)
    // An update stores the row again, and its columns with it.
    await v.client.tokens.update(ids[0]!, { data: 'b'.repeat(301), metadata: { changed: 'yes' } })
    await expectColumnsOf(v, ids)
    // Rows stored before the columns existed get them when the migration adds them.
    await v.store.close()
    await pool.query(`ALTER TABLE "${v.schema}".tokens DROP COLUMN head, DROP COLUMN stored_bytes`)
    await pool.query(`DELETE FROM "${v.schema}".tokenvault_migrations WHERE version = 19`)
    const again = { ...v, store: await postgresStore({ pool, schema: v.schema }) }
    await expectColumnsOf(again, ids)
    await again.store.close()
  })

  it('reads whole only the tokens a page answers: 20 tokens of 600 KB, a page of what fits in 4 MiB', async () => {
    const v = await vault()
    for (let i = 0; i < 20; i += 5)
      await Promise.all(
        Array.from({ length: 5 }, (_, j) =>
          v.client.tokens.create({ type: 'token', data: randomBytes(450_000).toString('base64') + (i + j) }),
        ),
      )
    const toastBlocks = async () => {
      await pool.query('SELECT pg_stat_force_next_flush()')
      const { rows } = await pool.query<{ n: string; size: string }>(
        `SELECT coalesce(s.toast_blks_read, 0) + coalesce(s.toast_blks_hit, 0) AS n,
           pg_relation_size(c.reltoastrelid) / current_setting('block_size')::int AS size
         FROM pg_statio_user_tables s JOIN pg_class c ON c.oid = s.relid
         WHERE s.schemaname = $1 AND s.relname = 'tokens'`,
        [v.schema],
      )
      return { n: Number(rows[0]!.n), size: Number(rows[0]!.size) }
    }
    // Each token of 600 KB takes about a twentieth of the table's out-of-line blocks: a page reads
    // those of the tokens it answers, and fewer than half of the others'.
    for (const list of [
      () => v.client.tokens.listV2({ size: 20 }),
      () => v.client.tokens.list({ size: 20 }).catch((error: { status?: number }) => error),
    ]) {
      const before = await toastBlocks()
      const page = await list()
      const after = await toastBlocks()
      const answered = 'data' in page ? page.data.length : 0
      expect(answered).toBeLessThan(10)
      expect(before.size).toBeGreaterThan(1000)
      expect(after.n - before.n).toBeLessThan((before.size * (answered + 10)) / 20)
      // And the statistics counted what it read: at least half of one token's blocks.
      expect(after.n - before.n).toBeGreaterThan(before.size / 40)
    }
  })
})
