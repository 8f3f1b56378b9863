/**
 * What one transaction may stage (1000 writes, 16 MiB of token JSON), on the memory and the file
 * store: the bound commits, one past is refused with 400 before anything is staged; a transaction
 * stored past the bounds (staged before they existed) is refused at commit without being read
 * whole, and rolls back or expires. Ending a transaction whose locks were taken over is linear.
 */
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'
import type { Op } from '../../src/store/index.js'
import { tempDir } from '../file/helpers.js'
import { failure, setup } from './setup.js'

const STORES: [string, () => Promise<Store>][] = [
  ['memory', async () => memoryStore()],
  ['file', async () => fileStore({ path: await tempDir(), durability: 'none' })],
]

/** An object of `n` plain values: tokenize makes one token of each (at most 100 a call). */
const values = (n: number, from: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`v${from + i}`, `value ${from + i}`]))

describe.each(STORES)('transaction bounds on the %s store', (_name, makeStore) => {
  it('1000 staged writes commit; the 1001st is refused with 400 naming 1000 and stages nothing', async () => {
    const { client, service, full, store } = await setup({ store: await makeStore() })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    for (let i = 0; i < 10; i++) await inTx.tokens.tokenize(values(100, i * 100))
    const before = await store.dump()
    const refused = await failure(inTx.tokens.create({ type: 'token', data: 'one too many' }))
    expect(refused.code).toBe('validation_failed')
    expect(refused.message).toContain('1000')
    expect(await store.dump()).toEqual(before)
    // Two at once from 999: exactly one fits, whichever order they land in.
    const tx2 = await client.transactions.create()
    const inTx2 = service.connect(full.key, { transactionId: tx2.id })
    for (let i = 0; i < 9; i++) await inTx2.tokens.tokenize(values(100, i * 100))
    await inTx2.tokens.tokenize(values(99, 900))
    const racing = await Promise.allSettled([
      inTx2.tokens.create({ type: 'token', data: 'a' }),
      inTx2.tokens.create({ type: 'token', data: 'b' }),
    ])
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    await client.transactions.commit(tx.id)
    await client.transactions.commit(tx2.id)
    expect((await client.tokens.list({ size: 1 })).pagination.total_items).toBe(2000)
  })

  it('16 777 216 characters of staged token JSON commit; one more is refused with 400 and stages nothing', async () => {
    const { client, service, full, store, tenant } = await setup({ store: await makeStore() })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    const charsOf = async () => (await store.getTransaction(tenant.id, tx.id))?.staged_chars ?? 0
    // The staged JSON of a token with `n` characters of data (long ones) is `n` + a fixed overhead.
    const MiB = 1024 * 1024
    await inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
    const overhead = (await charsOf()) - MiB
    for (let i = 0; i < 14; i++) await inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
    const room = 16_777_216 - (await charsOf()) - overhead
    expect(room).toBeGreaterThan(0)
    const before = await store.dump()
    const past = await failure(inTx.tokens.create({ type: 'token', data: 'x'.repeat(room + 1) }))
    expect(past.code).toBe('validation_failed')
    expect(past.message).toContain('16777216')
    expect(await store.dump()).toEqual(before)
    await inTx.tokens.create({ type: 'token', data: 'x'.repeat(room) })
    expect(await charsOf()).toBe(16_777_216)
    expect((await failure(inTx.tokens.create({ type: 'token', data: '' }))).code).toBe('validation_failed')
    await client.transactions.commit(tx.id)
    expect((await client.tokens.list({ size: 1 })).pagination.total_items).toBe(16)
  })

  it('a transaction stored past the bounds is refused at commit (400), rolls back, and expires by the sweep', async () => {
    const { client, store, clock, service, tenant } = await setup({ store: await makeStore() })
    const tenantId = tenant.id
    const stagePast = async () => {
      const tx = await client.transactions.create()
      const stored = (await store.getTransaction(tenantId, tx.id))!
      // As a version without bounds staged it: 1001 staged deletes, each with its lock.
      const ops: Op[] = [{ op: 'transaction.put', transaction: { ...stored, version: 1001 } }]
      for (let i = 0; i < 1001; i++) {
        const id = `t${String(i).padStart(4, '0')}`
        ops.push({
          op: 'staged.put',
          staged: { tenant_id: tenantId, transaction_id: tx.id, token_id: id, seq: i + 1, token: null },
        })
        ops.push({
          op: 'lock.put',
          lock: { tenant_id: tenantId, token_id: id, transaction_id: tx.id, expires_at: stored.expires_at },
        })
      }
      expect((await store.write({ ops })).ok).toBe(true)
      return tx
    }
    const kept = await client.tokens.create({ id: 't0000', type: 'token', data: 'kept' })
    const big = await stagePast()
    const refused = await failure(client.transactions.commit(big.id))
    expect(refused.code).toBe('validation_failed')
    expect(refused.message).toContain('1000')
    expect((await client.tokens.get(kept.id)).data).toBe('kept')
    await client.transactions.rollback(big.id)
    let dump = await store.dump()
    expect(dump.staged).toEqual([])
    // Its locks went too: a token of a locked id can be made outside.
    await client.tokens.create({ id: 't0500', type: 'token', data: 'free' })
    const expiring = await stagePast()
    clock.advance(60 * 60_000)
    const swept = await service.admin.sweep()
    expect(swept.transactions).toBe(2 - 1)
    expect(swept.failed).toBeUndefined()
    dump = await store.dump()
    expect(dump.staged).toEqual([])
    await client.tokens.create({ id: 't0501', type: 'token', data: 'free' })
    expect(dump.transactions.find((t) => t.id === expiring.id)?.state).toBe('expired')
    expect((await client.tokens.get(kept.id)).data).toBe('kept')
  })

  it('ending a transaction whose 300 locks were all taken over costs a linear number of guards and ops', async () => {
    const base = await makeStore()
    let work = 0
    const counted = delegatingStore(base, {
      write: (batch) => {
        work += batch.ops.length + (batch.checks?.length ?? 0)
        return base.write(batch)
      },
    })
    const { client, service, full, clock, store } = await setup({ store: counted })
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const made = (await client.tokens.tokenize(values(100, i * 100))) as Record<string, string>
      ids.push(...Object.values(made))
    }
    const first = await client.transactions.create()
    const inFirst = service.connect(full.key, { transactionId: first.id })
    for (const id of ids) await inFirst.tokens.update(id, { data: 'first' })
    clock.advance(60 * 60_000)
    const second = await client.transactions.create()
    const inSecond = service.connect(full.key, { transactionId: second.id })
    for (const id of ids) await inSecond.tokens.update(id, { data: 'second' })
    work = 0
    const swept = await service.admin.sweep()
    expect(swept.transactions).toBe(1)
    // Rewriting the whole end once per lost lock was about 300 × 900 / 2; linear is a few × 300.
    expect(work).toBeLessThan(20 * 300)
    // The second transaction still holds every token, and its commit applies.
    expect((await failure(client.tokens.update(ids[0]!, { data: 'outside' }))).code).toBe('conflict')
    expect((await store.dump()).staged.every((s) => s.transaction_id === second.id)).toBe(true)
    await client.transactions.commit(second.id)
    expect((await client.tokens.get(ids[299]!)).data).toBe('second')
    await client.tokens.update(ids[0]!, { data: 'outside' })
  })
})
