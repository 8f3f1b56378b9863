import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { TenantGate } from '../../adapters/postgres/gate.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { migrate } from '../../adapters/postgres/migrations.js'
import { fillInBackground } from '../../adapters/postgres/store.js'
import { fillTokenHeads } from '../../adapters/postgres/token-heads.js'
import { createService, manualClock } from '../../entry/index.js'
import { storedBytes } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * A token row keeps its head and its stored bytes in columns of their own (migrations 19 and 20),
 * so a page or a search reads whole only the tokens it answers: a large token's document is kept
 * out of line (TOAST) and read whole by any look inside it. The migrations rewrite nothing; rows
 * stored before them are filled in bounded steps.
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
    const masterKey = randomBytes(32)
    const service = createService({
      store,
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey,
      runner: null,
    })
    const tenant = await service.admin.createTenant({ name: 't' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:update', 'token:search'],
    })
    return { schema, store, service, masterKey, key, tenantId: tenant.id, client: service.connect(key) }
  }

  /** What each token's row keeps in its columns, against what the core makes of its document. */
  async function expectRowsOf(schema: string, ids: string[]) {
    const { rows } = await pool.query<{ doc: Record<string, unknown>; head: unknown; stored_bytes: string }>(
      `SELECT doc, head, stored_bytes FROM "${schema}".tokens WHERE id = ANY ($1) ORDER BY id`,
      [ids],
    )
    expect(rows).toHaveLength(ids.length)
    for (const row of rows) {
      const { data: _data, mask: _mask, ...rest } = row.doc
      expect(row.head).toEqual(rest)
      expect(Number(row.stored_bytes)).toBe(storedBytes(row.doc as never))
    }
  }

  /** What the store's reads answer of each token's head, against what the core makes of its document. */
  async function expectHeadsOf(v: Awaited<ReturnType<typeof vault>>, ids: string[]) {
    const docs = await v.store.getTokens(v.tenantId, ids)
    const heads = await v.store.getTokenHeads(v.tenantId, ids)
    expect(heads).toHaveLength(ids.length)
    for (const [i, doc] of docs.entries()) {
      const { data: _data, mask: _mask, ...rest } = doc as typeof doc & { mask?: unknown }
      expect(heads[i]).toEqual({ ...rest, stored_bytes: storedBytes(doc) })
    }
  }

  /** The table's file: a rewrite gives it a new one. */
  const fileOf = async (schema: string) =>
    (await pool.query(`SELECT pg_relation_filenode('"${schema}".tokens') AS f`)).rows[0].f as string

  /** Takes `schema` back to before migration 19: no columns, no trigger, no record of the fill. */
  async function asAtMigration18(schema: string) {
    await pool.query(`DROP TRIGGER tv_token_head ON "${schema}".tokens;
      ALTER TABLE "${schema}".tokens DROP COLUMN head, DROP COLUMN stored_bytes;
      DROP TABLE "${schema}".tokenvault_fills;
      DELETE FROM "${schema}".tokenvault_migrations WHERE version >= 19`)
  }

  /** Creates `count` tokens, `batch` at a time, `make(i)` giving each one's body: their ids. */
  async function createMany(
    v: Awaited<ReturnType<typeof vault>>,
    count: number,
    batch: number,
    make: (i: number) => Parameters<typeof v.client.tokens.create>[0],
  ) {
    const ids: string[] = []
    for (let i = 0; i < count; i += batch) {
      const made = await Promise.all(
        Array.from({ length: batch }, (_, j) => v.client.tokens.create(make(i + j))),
      )
      ids.push(...made.map((t) => t.id))
    }
    return ids
  }

  /** A vault whose tokens (`make`'s) were stored before step 19, its store closed: the vault and their ids. */
  async function storedBefore19(make: (v: Awaited<ReturnType<typeof vault>>) => Promise<string[]>) {
    const v = await vault()
    const ids = await make(v)
    await v.store.close()
    await asAtMigration18(v.schema)
    return { v, ids }
  }

  const some = async (v: Awaited<ReturnType<typeof vault>>) => (await createSome(v)).map((t) => t.id)

  /** A client of `v`'s application through a service over `store`. */
  const clientOver = (
    store: Awaited<ReturnType<typeof postgresStore>>,
    v: Awaited<ReturnType<typeof vault>>,
  ) =>
    createService({
      store,
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: v.masterKey,
      runner: null,
    }).connect(v.key)

  const fill = (schema: string) => fillTokenHeads(`"${schema}"`, (fn) => fn(), pool)

  const createSome = (v: Awaited<ReturnType<typeof vault>>) =>
    Promise.all([
      v.client.tokens.create({ type: 'token', data: 'a' }),
      v.client.tokens.create({ type: 'token', data: { nested: ['é', 1, null] }, metadata: { k: 'v' } }),
      v.client.tokens.create({ type: 'card_number', data: '4242424242424242' }),
      v.client.tokens.create({ type: 'token', data: 'x'.repeat(5000), search_indexes: ['{{ data }}'] }),
    ])

  it('keeps each token head and stored bytes as the core measures them, as written and as updated', async () => {
    const v = await vault()
    const ids = (await createSome(v)).map((t) => t.id)
    await expectRowsOf(v.schema, ids)
    await expectHeadsOf(v, ids)
    // An update stores the row again, and its columns with it.
    await v.client.tokens.update(ids[0]!, { data: 'b'.repeat(301), metadata: { changed: 'yes' } })
    await expectRowsOf(v.schema, ids)
    await expectHeadsOf(v, ids)
    await v.store.close()
  })

  it('migrates rows stored before the columns without rewriting the table, then fills them in steps', async () => {
    const { v, ids } = await storedBefore19(some)
    const file = await fileOf(v.schema)
    await migrate(pool, v.schema)
    expect(await fileOf(v.schema)).toBe(file)
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM "${v.schema}".tokens WHERE stored_bytes IS NULL`,
    )
    expect(rows[0].n).toBe(4)
    // Until a row is filled its reads compute both from its document.
    const again = { ...v, store: await postgresStore({ pool, schema: v.schema }) }
    await expectHeadsOf(again, ids)
    const done = await fill(v.schema)
    expect(done.done).toBe(true)
    await expectRowsOf(v.schema, ids)
    await expectHeadsOf(again, ids)
    // Recorded: the next fill reads nothing.
    expect(await fill(v.schema)).toEqual({ steps: 0, largest: 0, filled: 0, done: true })
    await again.store.close()
  })

  it('fills 300 small rows in steps of at most 256 rows, and 20 rows of 720 KB in steps of at most 4 MiB', async () => {
    const v = await vault()
    const small = await createMany(v, 300, 50, (i) => ({ type: 'token', data: `v${i}` }))
    await v.store.close()
    await asAtMigration18(v.schema)
    await migrate(pool, v.schema)
    // 256 rows, then 44, then the table's end.
    expect(await fill(v.schema)).toEqual({ steps: 3, largest: 256, filled: 300, done: true })
    await expectRowsOf(v.schema, small)

    const w = await vault()
    const large = await createMany(w, 20, 5, (i) => ({
      type: 'token',
      data: randomBytes(405_000).toString('base64') + i,
    }))
    await w.store.close()
    await asAtMigration18(w.schema)
    await migrate(pool, w.schema)
    // Each document takes 700–740 KB as stored: 5 fit in 4 MiB, 6 do not (7 would fit in 5 MiB,
    // 4 in 3 MiB). So 5, 5, 5, 5, then the table's end.
    const { rows } = await pool.query(`SELECT pg_column_size(doc) AS n FROM "${w.schema}".tokens`)
    for (const row of rows) {
      expect(row.n).toBeGreaterThan(700_000)
      expect(row.n).toBeLessThan(740_000)
    }
    expect(await fill(w.schema)).toEqual({ steps: 5, largest: 5, filled: 20, done: true })
    await expectRowsOf(w.schema, large)
  })

  it('a store opened on rows stored before the columns fills them in the background, and records it', async () => {
    const { v, ids } = await storedBefore19(some)
    const store = await postgresStore({ pool, schema: v.schema })
    const empty = async () =>
      (await pool.query(`SELECT count(*)::int AS n FROM "${v.schema}".tokens WHERE stored_bytes IS NULL`))
        .rows[0].n as number
    const recorded = async () =>
      (await pool.query(`SELECT count(*)::int AS n FROM "${v.schema}".tokenvault_fills`)).rows[0].n as number
    await vi.waitFor(async () => expect(await recorded()).toBe(1), { timeout: 20_000, interval: 20 })
    expect(await empty()).toBe(0)
    await expectRowsOf(v.schema, ids)
    await store.close()
  })

  it('paces the background fill to a tenth of the time while calls come: 9 × a step after a step a call began in', async () => {
    const runs = async (others: 'quiet' | 'calling') => {
      const { v } = await storedBefore19((w) =>
        createMany(w, 600, 100, (i) => ({ type: 'token', data: `v${i}` })),
      )
      await migrate(pool, v.schema)
      let now = 0
      let begun = 0
      const pauses: number[] = []
      const pacer = { now: () => now, pause: async (ms: number) => void pauses.push(ms) }
      // Each statement of the fill takes 10 ms of the pacer's time; another call begins in each, or none.
      const guard = <T>(fn: () => Promise<T>) => {
        begun += others === 'calling' ? 2 : 1
        now += 10
        return fn()
      }
      fillInBackground(pool, `"${v.schema}"`, guard, new TenantGate(1, 5000), () => begun, pacer)
      await vi.waitFor(
        async () =>
          expect((await pool.query(`SELECT 1 FROM "${v.schema}".tokenvault_fills`)).rowCount).toBe(1),
        { timeout: 20_000, interval: 20 },
      )
      return pauses
    }
    expect(await runs('quiet')).toEqual([])
    // The record's check, 256 + 256 + 88 rows, the table's end, the record: five pauses after the first.
    expect(await runs('calling')).toEqual([90, 90, 90, 90, 90])
  })

  it('fills beside writers: rows updated and created during the fill end as the core measures them', async () => {
    const { v, ids } = await storedBefore19((w) =>
      createMany(w, 600, 100, (i) => ({ type: 'token', data: `v${i}` })),
    )
    await migrate(pool, v.schema)
    const writing = testPool(url, 4)
    const store = await postgresStore({ pool: writing, schema: v.schema })
    const client = clientOver(store, v)
    const writes = Promise.all([
      ...ids
        .filter((_, i) => i % 3 === 0)
        .map((id) => client.tokens.update(id, { metadata: { during: 'fill' } })),
      ...Array.from({ length: 50 }, () =>
        client.tokens.create({ type: 'token', data: 'new' }).then((t) => ids.push(t.id)),
      ),
    ])
    const [done] = await Promise.all([fill(v.schema), writes])
    expect(done.done).toBe(true)
    await store.close()
    await writing.end()
    await expectRowsOf(v.schema, ids)
  })

  it('keeps the values of columns a former step 19 generated, as plain columns, without a rewrite', async () => {
    const { v, ids } = await storedBefore19(some)
    await pool.query(`ALTER TABLE "${v.schema}".tokens
      ADD COLUMN head jsonb GENERATED ALWAYS AS (doc - 'data' - 'mask') STORED,
      ADD COLUMN stored_bytes bigint GENERATED ALWAYS AS ("${v.schema}".tv_stored_bytes(doc)) STORED;
      INSERT INTO "${v.schema}".tokenvault_migrations (version, name) VALUES (19, 'token heads and stored bytes kept')`)
    const file = await fileOf(v.schema)
    await migrate(pool, v.schema)
    expect(await fileOf(v.schema)).toBe(file)
    const { rows } = await pool.query(
      `SELECT attname, attgenerated FROM pg_attribute
       WHERE attrelid = '"${v.schema}".tokens'::regclass AND attname IN ('head', 'stored_bytes')`,
    )
    expect(rows.map((r) => r.attgenerated)).toEqual(['', ''])
    await expectRowsOf(v.schema, ids)
    expect(await fill(v.schema)).toEqual({ steps: 0, largest: 0, filled: 0, done: true })
    // And the trigger keeps them from now on.
    const store = await postgresStore({ pool, schema: v.schema })
    await clientOver(store, v).tokens.update(ids[1]!, { data: 'changed', metadata: { after: 'conversion' } })
    await expectRowsOf(v.schema, ids)
    await store.close()
  })

  it('a step gives way to a long reader of the table rather than hold every later call behind it', async () => {
    const v = await vault()
    await createSome(v)
    await v.store.close()
    await asAtMigration18(v.schema)
    const holding = testPool(url, 1)
    const migrating = testPool(url, 1)
    const holder = await holding.connect()
    // A long reader: its transaction holds the table's share lock until it ends.
    await holder.query(`BEGIN; SELECT count(*) FROM "${v.schema}".tokens`)
    let migrated = false
    const migration = migrate(migrating, v.schema).then(() => {
      migrated = true
    })
    // Step 19 waits for the table's exclusive lock behind the reader.
    await vi.waitFor(
      async () => {
        const { rows } = await pool.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'relation' AND NOT granted
             AND mode = 'AccessExclusiveLock' AND relation = '"${v.schema}".tokens'::regclass`,
        )
        expect(rows[0].n).toBe(1)
      },
      { timeout: 10_000, interval: 10 },
    )
    // A call that comes now queues behind the step; it is answered once the step gives way,
    // while the long reader still holds the table (a guard of 15 s against a hang).
    const read = pool.query(`SELECT count(*)::int AS n FROM "${v.schema}".tokens`).then((r) => r.rows[0].n)
    const stuck = new Promise((resolve) => setTimeout(() => resolve('stuck'), 15_000).unref())
    expect(await Promise.race([read, stuck])).toBe(4)
    expect(migrated).toBe(false)
    await holder.query('COMMIT')
    holder.release()
    await migration
    expect(migrated).toBe(true)
    const { rows } = await pool.query(
      `SELECT max(version)::int AS v FROM "${v.schema}".tokenvault_migrations`,
    )
    expect(rows[0].v).toBe(21)
    await holding.end()
    await migrating.end()
  })

  it('migrates and opens a schema whose name holds quotes (\' and ")', async () => {
    const schema = `${freshSchema()}'"q`
    schemas.push(schema)
    const store = await postgresStore({ pool, schema })
    const { rows } = await pool.query(
      `SELECT max(version)::int AS v FROM "${schema.replace(/"/g, '""')}".tokenvault_migrations`,
    )
    expect(rows[0].v).toBe(21)
    await store.close()
  })

  it('reads whole only the tokens a page answers: 20 tokens of 600 KB, a page of what fits in 4 MiB', async () => {
    const v = await vault()
    // Autovacuum would read the whole out-of-line table once 20 tokens' chunks pass its insert
    // threshold, and its reads count in the same statistics: off for this table.
    await pool.query(
      `ALTER TABLE "${v.schema}".tokens SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)`,
    )
    await createMany(v, 20, 5, (i) => ({ type: 'token', data: randomBytes(450_000).toString('base64') + i }))
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
