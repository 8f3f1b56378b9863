/**
 * Tamper evidence on the durable stores, the log edited below the service: on the file store
 * through its LMDB databases (records put and removed as they are kept there), verified by
 * `tokenvault logs verify`'s function; on PostgreSQL by SQL on the `logs` table.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Database, open as openLmdb } from 'lmdb'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { key as fileKey } from '../../adapters/file/keys.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { verificationLine, verifyStoreLogs } from '../../bin/logs.js'
import { createService, manualClock } from '../../entry/index.js'
import type { LogEntry } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'

const masterKey = randomBytes(32)

/** Two tenants with a few token creates each, logged into `store`; the store closed after. */
async function logged(store: Store) {
  const service = createService({
    store,
    clock: manualClock(new Date('2030-01-01T00:00:00.000Z')),
    masterKey,
    runner: null,
  })
  const ids: string[] = []
  for (const name of ['a', 'b']) {
    const tenant = await service.admin.createTenant({ name })
    ids.push(tenant.id)
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name,
      type: 'private',
      permissions: ['token:create'],
    })
    for (let i = 0; i < 3; i++) await service.connect(key).tokens.create({ type: 'token', data: i })
  }
  await service.close()
  return ids as [string, string]
}

const chain = (store: Store, tenantId: string) => store.listLogs(tenantId, { order: 'chain', limit: 1000 })
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('file store: tampering is detected', () => {
  async function setup() {
    const dir = mkdtempSync(join(tmpdir(), 'tv-audit-'))
    dirs.push(dir)
    const [a, b] = await logged(await fileStore({ path: dir }))
    const verify = () => verifyStoreLogs({ store: `file:${dir}`, masterKey, tenant: a })
    // Edits as someone with write access to the files makes them: records put and removed as kept.
    const edit = async (change: (raw: Store, mine: LogEntry[], theirs: LogEntry[]) => Promise<unknown>) => {
      const raw = await fileStore({ path: dir })
      await change(raw, await chain(raw, a), await chain(raw, b))
      await raw.close()
    }
    expect((await verify())[0]!.result.ok).toBe(true)
    return { verify, edit }
  }

  it('a changed message, a deleted entry, two swapped entries and a copy from another tenant', async () => {
    const cases: ((raw: Store, mine: LogEntry[], theirs: LogEntry[]) => Promise<unknown>)[] = [
      (raw, mine) => raw.write({ ops: [{ op: 'log.put', entry: { ...mine[2]!, message: 'nothing' } }] }),
      (raw, mine) =>
        raw.write({ ops: [{ op: 'log.delete', tenant_id: mine[2]!.tenant_id, id: mine[2]!.id }] }),
      (raw, mine) => {
        const [x, y] = [mine[1]!, mine[2]!]
        const place = (e: LogEntry) => ({ id: e.id, lane: e.lane, seq: e.seq })
        return raw.write({
          ops: [
            { op: 'log.put', entry: { ...y, ...place(x) } },
            { op: 'log.put', entry: { ...x, ...place(y) } },
          ],
        })
      },
      (raw, mine, theirs) =>
        raw.write({
          ops: [
            {
              op: 'log.put',
              entry: {
                ...theirs[1]!,
                tenant_id: mine[1]!.tenant_id,
                ...{ id: mine[1]!.id, lane: mine[1]!.lane, seq: mine[1]!.seq },
              },
            },
          ],
        }),
    ]
    for (const change of cases) {
      const { verify, edit } = await setup()
      await edit(change)
      const [result] = await verify()
      expect(result!.result.ok).toBe(false)
      expect(verificationLine(result!)).toMatch(/BROKEN at entry/)
    }
  })
})

describe('file store: an index edited to hide an entry from a filtered page is detected', () => {
  /** The log of tenant `a` on a file store in a new directory, and its entries in chain order. */
  async function logDir() {
    const dir = mkdtempSync(join(tmpdir(), 'tv-audit-'))
    dirs.push(dir)
    const [a] = await logged(await fileStore({ path: dir }))
    const store = await fileStore({ path: dir })
    const mine = await chain(store, a)
    await store.close()
    const verify = async () => (await verifyStoreLogs({ store: `file:${dir}`, masterKey, tenant: a }))[0]!
    expect((await verify()).result.ok).toBe(true)
    // The card's entry: a token's create, filed under its token.
    const target = mine.find((e) => e.entity_type === 'token' && e.entity_id !== undefined)!
    return { dir, a, target, verify }
  }
  /** Edits `dir`'s index database `name` as someone with write access to the files does. */
  async function editIndex(dir: string, name: string, edit: (db: Database) => Promise<unknown>) {
    const env = openLmdb({ path: dir, keyEncoding: 'binary', encoding: 'json', maxDbs: 40 })
    await edit(env.openDB({ name, keyEncoding: 'binary', encoding: 'json' }))
    await env.close()
  }
  const byEntity = (store: Store, a: string, e: LogEntry) =>
    store.listLogs(a, { order: 'newest', limit: 100, entity_type: e.entity_type, entity_id: e.entity_id! })

  it('a key of logsByEntity, logsByType or logsByTime removed: verification answers BROKEN (index) at that entry', async () => {
    for (const [name, parts] of [
      ['logsByEntity', (e: LogEntry) => [e.tenant_id, e.entity_type, e.entity_id!]],
      ['logsByType', (e: LogEntry) => [e.tenant_id, e.entity_type]],
      ['logsByTime', (e: LogEntry) => [e.tenant_id]],
    ] as const) {
      const { dir, a, target, verify } = await logDir()
      await editIndex(dir, name, (db) => db.remove(fileKey(...parts(target), target.created_at, target.id)))
      if (name === 'logsByEntity') {
        // What the edit buys: the token's page no longer shows its create.
        const store = await fileStore({ path: dir })
        expect((await byEntity(store, a, target)).map((e) => e.id)).not.toContain(target.id)
        await store.close()
      }
      const { result } = await verify()
      expect(result).toMatchObject({ ok: false, broken: { id: target.id, reason: 'index' } })
    }
  })

  it('a key that files an entry under another entity shows it on no page of that entity', async () => {
    const { dir, a, target } = await logDir()
    const elsewhere = { ...target, entity_id: 'tok_someone_else' }
    await editIndex(dir, 'logsByEntity', (db) =>
      db.put(fileKey(a, target.entity_type, elsewhere.entity_id, target.created_at, target.id), 1),
    )
    const store = await fileStore({ path: dir })
    expect(await byEntity(store, a, elsewhere)).toEqual([])
    expect((await byEntity(store, a, target)).map((e) => e.id)).toContain(target.id)
    await store.close()
  })
})

describePostgres('postgres: tampering is detected', (url) => {
  const pool = testPool(url)
  const schemas: string[] = []
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  async function setup() {
    const schema = freshSchema()
    schemas.push(schema)
    const [a, b] = await logged(await postgresStore({ pool, schema }))
    const store = await postgresStore({ pool, schema })
    const service = createService({ store, clock: manualClock(), masterKey, runner: null })
    const verify = () => service.admin.verifyLogs({ tenantId: a })
    expect((await verify()).ok).toBe(true)
    return { schema, a, b, verify, mine: await chain(store, a), theirs: await chain(store, b) }
  }

  it('a changed message', async () => {
    const { schema, verify, mine } = await setup()
    await pool.query(
      `UPDATE ${schema}.logs SET doc = jsonb_set(doc, '{message}', '"nothing"') WHERE id = $1`,
      [mine[2]!.id],
    )
    expect(await verify()).toMatchObject({ ok: false, broken: { reason: 'mac' } })
  })

  it('a deleted entry', async () => {
    const { schema, verify, mine } = await setup()
    await pool.query(`DELETE FROM ${schema}.logs WHERE id = $1`, [mine[2]!.id])
    expect(await verify()).toMatchObject({ ok: false, broken: { reason: 'gap' } })
  })

  it('two swapped entries', async () => {
    const { schema, verify, mine } = await setup()
    const [x, y] = [mine[1]!, mine[2]!]
    expect(x.entity_id).not.toBe(y.entity_id)
    await pool.query(
      `UPDATE ${schema}.logs SET doc = CASE WHEN id = $1 THEN jsonb_set(doc, '{entity_id}', to_jsonb($4::text))
        ELSE jsonb_set(doc, '{entity_id}', to_jsonb($3::text)) END WHERE id IN ($1, $2)`,
      [x.id, y.id, x.entity_id, y.entity_id],
    )
    expect(await verify()).toMatchObject({ ok: false, broken: { reason: 'mac' } })
  })

  it('a column the indexes read changed (the entry hidden from its entity’s page): BROKEN (index)', async () => {
    for (const set of [
      `entity_id = 'tok_elsewhere'`,
      `created_at = '2000-01-01T00:00:00.000Z'`,
      `entity_type = 'reactor'`,
    ]) {
      const { schema, a, verify, mine } = await setup()
      const target = mine.find((e) => e.entity_type === 'token' && e.entity_id !== undefined)!
      await pool.query(`UPDATE ${schema}.logs SET ${set} WHERE id = $1`, [target.id])
      const store = await postgresStore({ pool, schema })
      const page = await store.listLogs(a, {
        order: 'newest',
        limit: 100,
        entity_type: 'token',
        entity_id: target.entity_id!,
        to: target.created_at,
        from: target.created_at,
      })
      expect(page.map((e) => e.id)).not.toContain(target.id)
      expect(await verify()).toMatchObject({ ok: false, broken: { id: target.id, reason: 'index' } })
    }
  })

  it('an entry copied from another tenant', async () => {
    const { schema, a, verify, mine, theirs } = await setup()
    const copy = { ...theirs[1]!, tenant_id: a, id: mine[1]!.id, lane: mine[1]!.lane, seq: mine[1]!.seq }
    await pool.query(`UPDATE ${schema}.logs SET doc = $2::jsonb WHERE id = $1`, [
      mine[1]!.id,
      JSON.stringify(copy),
    ])
    expect(await verify()).toMatchObject({ ok: false, broken: { reason: 'mac' } })
  })
})
