/**
 * `service.admin.view` over the file store and PostgreSQL: the keyset pages of tokens (found again
 * after tokens before the cursor come and go), masks, locks, applications, the audit log and the
 * deliveries read the same on every store.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import { createTestVault } from '../../testing/vault.js'
import { tempDir } from '../file/helpers.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'

async function viewsAlike(store: Store) {
  const vault = await createTestVault({
    store,
    destinations: { 'https://hooks.stores.test': () => new Response(null, { status: 204 }) },
  })
  try {
    const client = vault.client()
    for (const id of ['b', 'd', 'f', 'h', 'j'])
      await client.tokens.create({ id, type: 'token', data: `secret-${id}`, mask: 'M' })
    const view = vault.service.admin.view
    const tenant = vault.tenant.id
    const one = await view.tokens(tenant, { size: 2 })
    expect(one.data.map((t) => t.id)).toEqual(['b', 'd'])
    await client.tokens.delete('d')
    await client.tokens.create({ id: 'a', type: 'token', data: 'a' })
    const two = await view.tokens(tenant, { size: 2, start: one.next! })
    expect(two.data.map((t) => [t.id, t.masked])).toEqual([
      ['f', 'M'],
      ['h', 'M'],
    ])
    for (const token of two.data) expect(token).not.toHaveProperty('data')
    expect(JSON.stringify(two)).not.toContain('secret-')
    const tx = await client.transactions.create()
    await vault.client('private', { transactionId: tx.id }).tokens.update('f', { metadata: { a: 'b' } })
    expect((await view.transactions(tenant)).data).toMatchObject([{ id: tx.id, locks: ['f'] }])
    expect((await view.tokens(tenant, { size: 1, start: one.next! })).data).toMatchObject([
      { id: 'f', locked_by: tx.id },
    ])
    expect((await view.applications(tenant, { limit: 2 })).data).toHaveLength(2)
    expect((await view.applications(tenant)).total).toBe(3)
    // The audit log, newest first, by entity and by cursor; the deliveries, oldest first.
    const logs = await view.logs(tenant, { entity_type: 'token', entity_id: 'd', size: 1 })
    expect(logs.data.map((e) => e.operation)).toEqual(['delete'])
    const older = await view.logs(tenant, { entity_type: 'token', entity_id: 'd', start: logs.next! })
    expect(older.data.map((e) => e.operation)).toEqual(['create'])
    const since = await view.logs(tenant, { start_date: '2030-01-01T00:00:00.000Z', size: 100 })
    expect(since.data.length).toBeGreaterThan(5)
    expect(JSON.stringify(since)).not.toContain('secret-')
    await vault
      .client('management')
      .webhooks.create({ name: 'h', url: 'https://hooks.stores.test/in', events: ['token.created'] })
    for (const id of ['x1', 'x2']) await client.tokens.create({ id, type: 'token', data: id })
    const first = await view.deliveries(tenant, { size: 1 })
    const second = await view.deliveries(tenant, { size: 1, after: first.next! })
    expect([...first.data, ...second.data].map((d) => JSON.parse(d.body!).data.token.id)).toEqual([
      'x1',
      'x2',
    ])
  } finally {
    await vault.close()
  }
}

describe('the admin view over the file store', () => {
  it('reads pages, masks and locks as on the memory store', async () => {
    await viewsAlike(await fileStore({ path: await tempDir() }))
  })
})

describePostgres('the admin view over PostgreSQL', (url) => {
  const pool = testPool(url, 4)
  const schemas: string[] = []
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })
  it('reads pages, masks and locks as on the memory store', async () => {
    const schema = freshSchema()
    schemas.push(schema)
    await viewsAlike(await postgresStore({ pool, schema }))
  })
})
