/**
 * `service.admin.view` over the file store and PostgreSQL: the keyset pages of tokens (found again
 * after tokens before the cursor come and go), masks, locks and applications read the same on
 * every store.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import { createTestVault } from '../../testing/vault.js'
import { tempDir } from '../file/helpers.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'

async function viewsAlike(store: Store) {
  const vault = await createTestVault({ store })
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
