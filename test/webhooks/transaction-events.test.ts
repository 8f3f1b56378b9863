/**
 * The events of a transaction's commit: `token.created` for a token it created, `token.updated`
 * for an existing token it changed, `token.deleted` for an existing token it deleted, and nothing
 * for a token it created and deleted again (it never existed outside the transaction). A staged
 * create is committed guarded absent: a token that appeared meanwhile is a 409, never overwritten.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { type ServiceError, STATUS_BY_CODE } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { SENT_EVENT_TYPES } from '../../src/webhooks/index.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

async function subscribed(store?: Store) {
  const v = await createTestVault({
    destinations: { [RECEIVER]: () => new Response(null, { status: 200 }) },
    ...(store ? { store } : {}),
  })
  await v
    .client('management')
    .webhooks.create({ name: 'all', url: `${RECEIVER}/in`, events: [...SENT_EVENT_TYPES] })
  const client = v.client()
  const tx = await client.transactions.create()
  const inTx = v.client('private', { transactionId: tx.id })
  /** The events made since the last call, in the order their writes made them: `type id`. */
  let seen = 0
  const events = async () => {
    const all = (await v.webhooks.deliveries()).map((d) => {
      const event = JSON.parse(d.body) as { data: { token: { id: string } } }
      return `${d.event_type} ${event.data.token.id}`
    })
    const fresh = all.slice(seen)
    seen = all.length
    return fresh
  }
  return { v, client, tx, inTx, events }
}

describe('a committed transaction’s token events', () => {
  it('token.created, token.updated and token.deleted, as staged; none for a token created and deleted in it', async () => {
    const { v, client, tx, inTx, events } = await subscribed()
    const updated = await client.tokens.create({ type: 'token', data: 'b' })
    const deleted = await client.tokens.create({ type: 'token', data: 'c' })
    expect(await events()).toEqual([`token.created ${updated.id}`, `token.created ${deleted.id}`])
    const created = await inTx.tokens.create({ type: 'token', data: 'a' })
    await inTx.tokens.update(updated.id, { metadata: { n: '2' } })
    await inTx.tokens.delete(deleted.id)
    const gone = await inTx.tokens.create({ type: 'token', data: 'd' })
    await inTx.tokens.delete(gone.id)
    expect(await events()).toEqual([]) // staged: nothing until the commit
    await client.transactions.commit(tx.id)
    expect(await events()).toEqual([
      `token.created ${created.id}`,
      `token.updated ${updated.id}`,
      `token.deleted ${deleted.id}`,
    ])
    expect((await client.tokens.get(created.id)).data).toBe('a')
    await expect(client.tokens.get(gone.id)).rejects.toMatchObject({ code: 'not_found' })
    await v.close()
  })

  it('a token created then updated in one transaction is token.created once, its id made or given', async () => {
    const { v, client, tx, inTx, events } = await subscribed()
    const made = await inTx.tokens.create({ type: 'token', data: 'a' })
    await inTx.tokens.update(made.id, { data: 'a2' })
    await inTx.tokens.create({ id: 'given', type: 'token', data: 'b' })
    await inTx.tokens.update('given', { metadata: { n: '2' } })
    await client.transactions.commit(tx.id)
    expect(await events()).toEqual([`token.created ${made.id}`, 'token.created given'])
    expect((await client.tokens.get(made.id)).data).toBe('a2')
    await v.close()
  })

  it('a token created, deleted and created again in one transaction is token.created; an existing one deleted and created again is token.updated', async () => {
    const { v, client, tx, inTx, events } = await subscribed()
    await client.tokens.create({ id: 'old', type: 'token', data: 'old' })
    await events()
    await inTx.tokens.create({ id: 'new', type: 'token', data: 'x' })
    await inTx.tokens.delete('new')
    await inTx.tokens.create({ id: 'new', type: 'token', data: 'y' })
    await inTx.tokens.delete('old')
    await inTx.tokens.create({ id: 'old', type: 'token', data: 'old2' })
    await client.transactions.commit(tx.id)
    expect(await events()).toEqual(['token.created new', 'token.updated old'])
    await v.close()
  })

  it('a staged create meets a token that appeared meanwhile: the commit is a 409 and writes nothing', async () => {
    const store = memoryStore()
    const { v, client, tx, inTx, events } = await subscribed(store)
    await inTx.tokens.create({ id: 'x', type: 'token', data: 'staged' })
    // Put behind the service's back (no lock guard), as a write that took an expired lock over would.
    const there = {
      id: 'x',
      tenant_id: v.tenant.id,
      type: 'token',
      data: null,
      containers: ['/general/high/'],
      metadata: { there: 'first' },
      created_by: 'someone',
      created_at: '2030-01-01T00:00:00.000Z',
    }
    await store.write({ ops: [{ op: 'token.put', token: there }] })
    const refused = await client.transactions.commit(tx.id).catch((e: unknown) => e)
    expect(refused).toMatchObject({ code: 'conflict', message: 'a token with id x already exists' })
    expect(STATUS_BY_CODE[(refused as ServiceError).code]).toBe(409)
    expect(await store.getToken(v.tenant.id, 'x')).toMatchObject({ metadata: { there: 'first' } })
    expect(await events()).toEqual([])
    await client.transactions.rollback(tx.id) // still open: the caller ends it
    await v.close()
  })
})
